"""The data mixture: from token shards (each the tokens of one document shard) to train and validation token
shards for a token budget, in four passes over the shards, none of which holds the whole corpus.

- Validation: documents whose hash of (seed, id) falls under `validation_fraction`, among those any source
  selects; never in training, written once each.
- Training: each source gets round(weight x budget) tokens at the granularity of pieces (documents cut into
  `chunk_tokens`-token chunks): whole epochs while the target exceeds the source, up to `max_epochs` (a budget
  that needs more is an error with the numbers), then the pieces under a seeded cut (`selection`). The copies of every source are shuffled together by a seeded
  key and written in shards of at most `shard_tokens` tokens (`placement`), so any prefix of the stream is
  already a mixture. A document's draws and place depend on its id and the config, not on its shard.

Passes: count (per token shard: tokens per bin of each source's selection point) -> plan (the cuts, from the
summed counts) -> fill (per token shard: the few documents past each cut that fill the gap) -> references (per
token shard, to the parts of the output) -> write (per part). Each pass fans out to the stage's Dask cluster when
it has one (`tasks.fan_out`), the per-token-shard passes a few shards to a call; the last two resume from their
records.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

from configs.mixture import MixtureConfig
from storage.fs import remove_folder
from tasks.fan_out import Timed, fan_out
from tasks.mixture.placement import Layout, parts_for, write_part, write_refs
from tasks.mixture.selection import card_rows, count_shard, fill_candidates, fill_gaps, plan_draws
from tasks.mixture.splits import TRAIN_SPLIT, VALIDATION_SPLIT


CALL_SHARDS = 8      # token shards per call in the passes over them: one takes ~10 ms, about a Dask round trip


def mix(pairs: list[tuple[str, str]], out_dir: str, vocab_size: int, config: MixtureConfig,
        planned: Callable[[list[dict]], None] | None = None) -> dict:
    """`pairs`: (token shard base, document shard URL) with documents in the same order in both. `planned` is
    given the card's rows as soon as the draws are known, before the last two passes write them (the stage draws
    its chart meanwhile)."""
    if not pairs:
        raise ValueError("no token shards to mix")
    seconds: list[float] = []

    def timed_fan_out(function: Callable, items, per_call: int = CALL_SHARDS) -> list:
        timed = fan_out(Timed(function), items, per_call)
        seconds.extend(call_seconds for call_seconds, _ in timed)
        return [result for _, result in timed]

    counts = timed_fan_out(partial(count_shard, config=config), pairs)
    draws = plan_draws(counts, config)
    draws = fill_gaps(draws, timed_fan_out(partial(fill_candidates, config=config, draws=draws), pairs))
    rows = card_rows(draws, config)
    if planned is not None:
        planned(rows)
    realized = sum(draw.tokens for draw in draws)
    validation_tokens = sum(count.validation_tokens for count in counts)

    layout = Layout(out_dir, tuple(base for base, _ in pairs),
                    {TRAIN_SPLIT: parts_for(realized, config.shard_tokens),
                     VALIDATION_SPLIT: parts_for(validation_tokens, config.shard_tokens)})
    timed_fan_out(partial(write_refs, config=config, draws=draws, layout=layout), enumerate(pairs))
    jobs = [(split, part) for split in (TRAIN_SPLIT, VALIDATION_SPLIT) for part in range(layout.parts[split])]
    written = timed_fan_out(partial(write_part, layout=layout, vocab_size=vocab_size,
                                    shard_tokens=config.shard_tokens), jobs, per_call=1)
    shuffled = remove_folder(layout.work)
    shards = [shard for part in written for shard in part["shards"]]
    return {"sources": rows, "train_tokens": realized,
            "train_pieces": sum(row["pieces_drawn"] for row in rows),
            "validation_tokens": validation_tokens,
            "validation_documents": sum(count.validation_documents for count in counts),
            "max_abs_weight_error": round(max(abs(r["weight_realized"] - r["weight_requested"]) for r in rows), 6),
            "shards": shards, "seconds": round(sum(seconds), 4),
            "work_bytes": shuffled["bytes"], "work_files": shuffled["files"]}
