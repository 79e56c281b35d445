"""What a variant's stages removed, per drop reason, in documents, bytes and tokens. The removed text is never
tokenized: its tokens are estimated at the bytes per token of what the variant kept, under the shared tokenizer."""
from __future__ import annotations


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
