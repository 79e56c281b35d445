"""Where the drawn documents go: one seeded order over the whole stream, written part by part.

Every drawn copy of a piece gets an order key, a hash of (stream seed, source, epoch, id, chunk); validation documents
(whole) are ordered by their seeded hash. A split's stream is its copies sorted by key: a shuffle of every source
together (so any prefix of it is already a mixture) that no shard placement can change. Keys are uniform, so
their top bits cut the stream into parts of about `shard_tokens` tokens each. Each token shard writes
(key, shard, row, start, length) references per part; each part sorts its references and copies those token
ranges into shards `<split>.<PPPPP>.<KKK>` of at most `shard_tokens` tokens. Parts in order, then pieces in order, are the stream
in order, and no step holds more than one shard's documents or one part's references.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from configs.mixture import MixtureConfig
from storage.token_shard import TokenShard, TokenShardWriter, token_shard_sha256
from tasks.mixture.selection import SourceDraw, hashes64, read_shard, selection_points, source_pieces
from tasks.mixture.splits import TRAIN_SPLIT, VALIDATION_SPLIT
from tasks.resumable import run_once


def parts_for(tokens: int, shard_tokens: int) -> int:
    return max(1, math.ceil(tokens / shard_tokens))


def shards_at_most(tokens: int, shard_tokens: int) -> int:
    """How many shards a split of `tokens` can take: within a part, any two neighbouring shards hold more than
    `shard_tokens` together (or the second would not have been started), so a part of t tokens takes at most
    2 t / shard_tokens + 2."""
    return 4 * parts_for(tokens, shard_tokens)


@dataclass(frozen=True)
class Layout:
    out_dir: str
    token_bases: tuple[str, ...]      # the input token shards, in the order their references name them
    parts: dict[str, int]             # split -> parts

    @property
    def work(self) -> str:
        return f"{self.out_dir}/work"

    def refs_path(self, split: str, part: int, shard: int) -> str:
        return f"{self.work}/refs/{split}/{part:05d}/{shard:05d}.npy"


def _part_of(keys: np.ndarray, parts: int) -> np.ndarray:
    return ((keys >> np.uint64(32)) * np.uint64(parts)) >> np.uint64(32)


def write_refs(job: tuple[int, tuple[str, str]], config: MixtureConfig, draws: list[SourceDraw],
               layout: Layout) -> dict:
    """One token shard's references, per split and part (resumable: a rerun finds the record)."""
    index, pair = job

    def compute() -> dict:
        docs = read_shard(pair, config)
        keys, refs = [], []
        for source, draw in enumerate(draws):
            pieces = source_pieces(docs, source, config.chunk_tokens)
            ranges = np.stack([pieces.rows, pieces.starts(config.chunk_tokens), pieces.tokens], axis=1)
            last_epoch = draw.drawn_last_epoch(selection_points(docs, pieces, config.seed, source))
            for epoch in range(draw.whole_epochs + 1):
                chosen = slice(None) if epoch < draw.whole_epochs else last_epoch
                keys.append(hashes64([f"{config.stream_seed}\0{source}\0{epoch}\0{docs.ids[row]}\0{chunk}" for row, chunk
                                      in zip(pieces.rows[chosen].tolist(), pieces.chunks[chosen].tolist())]))
                refs.append(ranges[chosen])
        validation = np.flatnonzero(docs.validation)
        whole = np.stack([validation, np.zeros_like(validation), docs.tokens[validation]], axis=1)
        train = np.concatenate(refs) if refs else np.empty((0, 3), np.int64)
        for split, split_keys, split_refs in ((TRAIN_SPLIT, np.concatenate(keys), train),
                                              (VALIDATION_SPLIT, docs.order_keys[validation], whole)):
            _scatter(layout, split, index, split_keys, split_refs.astype(np.uint64))
        return {"copies": int(train.shape[0]), "validation": int(validation.size)}

    return run_once(f"{layout.work}/records/refs/{index:05d}.json", compute)


def _scatter(layout: Layout, split: str, shard: int, keys: np.ndarray, ranges: np.ndarray) -> None:
    """`ranges`: (row, start, length) of each copy's tokens in its document."""
    parts = layout.parts[split]
    part = _part_of(keys, parts)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    refs = np.column_stack([keys, np.full(keys.size, shard, np.uint64), ranges])[order]
    for index in range(parts):
        path = layout.refs_path(split, index, shard)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        np.save(path, refs[bounds[index]:bounds[index + 1]])


def write_part(job: tuple[str, int], layout: Layout, vocab_size: int, shard_tokens: int) -> dict:
    """One part of a split: its references from every token shard, in key order, their token ranges copied into
    token shards."""
    split, part = job

    def compute() -> dict:
        refs = np.concatenate([np.load(layout.refs_path(split, part, shard))
                               for shard in range(len(layout.token_bases))])
        refs = refs[np.argsort(refs[:, 0], kind="stable")]
        opened: dict[int, TokenShard] = {}

        def tokens(shard: int, row: int, start: int, length: int) -> np.ndarray:
            if shard not in opened:
                opened[shard] = TokenShard(layout.token_bases[shard])
            return opened[shard].document(row)[start:start + length]

        documents = (tokens(int(shard), int(row), int(start), int(length)) for _, shard, row, start, length in refs)
        return {"shards": _write(documents, f"{layout.out_dir}/{split}.{part:05d}", vocab_size, shard_tokens)}

    return run_once(f"{layout.work}/records/write/{split}-{part:05d}.json", compute)


def _write(documents, prefix: str, vocab_size: int, shard_tokens: int) -> list[dict]:
    """Pieces in the given order into `<prefix>.<KKK>` token shards of at most `shard_tokens` tokens (a single
    longer piece gets a shard of its own)."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    written, writer, filled = [], None, 0
    for tokens in documents:
        if writer is None or (filled and filled + tokens.size > shard_tokens):
            if writer is not None:
                written.append(_closed(writer))
            writer, filled = TokenShardWriter(f"{prefix}.{len(written):03d}", vocab_size), 0
        writer.add_document(tokens)
        filled += int(tokens.size)
    if writer is not None:
        written.append(_closed(writer))
    return written


def _closed(writer: TokenShardWriter) -> dict:
    bin_path, idx_path = writer.close()
    shard = TokenShard(writer.path)
    return {"path": str(writer.path), "bytes": bin_path.stat().st_size + idx_path.stat().st_size,
            "sha256": token_shard_sha256(writer.path), "documents": len(shard), "tokens": shard.num_tokens}


def covering_budget(tokens: int, shard_tokens: int, ranks: int, seq_len: int) -> int:
    """A mixture budget whose shards cover `tokens` of training without wrapping around: the trainer's windows
    never cross a shard and are dealt evenly to the ranks, so each shard and rank may leave up to a window unused."""
    shards = shards_at_most(2 * tokens, shard_tokens)        # the budget is well under 2x the tokens
    return math.ceil(tokens * 1.01) + (ranks + shards) * (seq_len + 1)
