"""What a variant's stages removed, per drop reason, in documents, bytes and tokens. The removed text is never
tokenized: its tokens are estimated at the bytes per token of what the variant kept, under the shared tokenizer."""
from __future__ import annotations

from storage.stage_figures import MixtureFigures

REMOVING_STAGES = ("dedup", "quality_filter", "decontaminate")


def removed_text_bytes_per_token(tokenize_stats: dict) -> float:
    """UTF-8 bytes per token (EOS included) of what the variant kept, under the shared tokenizer."""
    tokens = tokenize_stats["notes"].get("tokens", 0)
    return tokenize_stats["bytes_in"] / tokens if tokens else 0.0


def reason_removals(stats: dict, bytes_per_token: float) -> dict[str, dict]:
    """Per drop reason of one stage: documents, bytes of their text and the tokens that text comes to."""
    sizes = stats.get("dropped_bytes", {})
    return {reason: {"documents": count, "bytes": sizes.get(reason, 0),
                     "tokens": round(sizes.get(reason, 0) / bytes_per_token) if bytes_per_token else None}
            for reason, count in stats["drops"].items()}


def variant_removals(tokens: int, variants: dict[str, dict]) -> dict[str, dict]:
    """Per variant (its `stages` and `mixtures` as stage results): what its stages removed per drop reason, its
    unique training tokens and the epochs a budget of `tokens` took over them."""
    rows = {}
    for name, variant in variants.items():
        stages = variant["stages"]
        bytes_per_token = removed_text_bytes_per_token(stages["tokenize"]["stats"])
        removed = {stage: reason_removals(stages[stage]["stats"], bytes_per_token)
                   for stage in REMOVING_STAGES if stage in stages}
        mixture = MixtureFigures.of(next(iter(variant["mixtures"].values())))
        available = sum(source["tokens_available"] for source in mixture.sources)
        rows[name] = {"documents_in": stages["extract"]["stats"]["documents_out"],
                      "documents_out": stages["decontaminate"]["stats"]["documents_out"],
                      "removed": removed, "unique_train_tokens": available,
                      "epochs": round(tokens / available, 4) if available else None}
    return rows
