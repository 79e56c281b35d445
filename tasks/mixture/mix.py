"""The data mixture: from token shards (each the tokens of one document shard) to train and validation token
shards for a token budget.

- Validation: documents whose hash of (seed, id) falls under `validation_fraction`, among those any source
  selects; never in training, written once each.
- Training: each source gets round(weight x budget) tokens, drawn at document granularity in a seeded order
  (documents ordered by their hash, then permuted per source and epoch: placement in shards does not matter).
  When a source runs out, the next epoch starts over it, up to `max_epochs`; a budget that needs more is an
  error with the numbers. The last, partial epoch is filled document by document to land near the target.
  The drawn documents of all sources are shuffled together (seeded) and written in shards of at most
  `shard_tokens` tokens, so any prefix of the stream is already a mixture.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from configs.mixture import MixtureConfig, MixtureSource
from storage.document_shard import read_documents
from storage.token_shard import TokenShard, TokenShardWriter, token_shard_sha256
from tasks.mixture.splits import TRAIN_SPLIT, VALIDATION_SPLIT
from tasks.tokenize.sample import document_hashes, is_heldout


@dataclass
class Catalog:
    """Every document of the input: where its tokens are, how many, its hash and its selecting columns."""
    shards: list[TokenShard]
    shard: np.ndarray
    row: np.ndarray
    tokens: np.ndarray
    hashes: np.ndarray
    columns: dict[str, np.ndarray]


def build_catalog(pairs: list[tuple[str, str]], columns: list[str], seed: int) -> Catalog:
    """`pairs`: (token shard base, document shard URL) with documents in the same order in both."""
    if not pairs:
        raise ValueError("no token shards to mix")
    shards, shard_of, tokens, hashes = [], [], [], []
    values: dict[str, list] = {name: [] for name in columns}
    for index, (token_base, document_url) in enumerate(pairs):
        shard = TokenShard(token_base)
        table = read_documents(document_url, ["id", *columns])
        if table.num_rows != len(shard):
            raise ValueError(f"{token_base}: {len(shard)} token documents for {table.num_rows} in {document_url}")
        shards.append(shard)
        shard_of.append(np.full(len(shard), index, np.int64))
        tokens.append(np.diff(np.asarray(shard.offsets)))
        hashes.append(document_hashes(table.column("id").to_pylist(), seed))
        for name in columns:
            values[name] += table.column(name).to_pylist()
    rows = [np.arange(len(shard), dtype=np.int64) for shard in shards]
    return Catalog(shards, np.concatenate(shard_of), np.concatenate(rows), np.concatenate(tokens).astype(np.int64),
                   np.concatenate(hashes), {name: np.array(column, dtype=object) for name, column in values.items()})


def selects(catalog: Catalog, source: MixtureSource) -> np.ndarray:
    mask = np.ones(catalog.tokens.size, dtype=bool)
    for column, values in source.where.items():
        mask &= np.isin(catalog.columns[column], values)
    return mask


def draw(tokens: np.ndarray, target: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Positions into `tokens` (documents' token counts) summing close to `target` in whole documents: whole
    epochs while the target exceeds the source, then, in a fresh seeded order, every document that still fits,
    and the smallest other one if that lands closer. Returns the positions and the epochs."""
    chosen, remaining, total = [], target, int(tokens.sum())
    while remaining >= total:                                 # the caller has checked the repetition cap
        chosen.append(rng.permutation(tokens.size))
        remaining -= total
    last, left_out = [], []
    for position in rng.permutation(tokens.size).tolist():
        if tokens[position] <= remaining:
            last.append(position)
            remaining -= int(tokens[position])
        else:
            left_out.append(position)
    if remaining > 0 and left_out:                            # one more document if it lands closer
        smallest = min(left_out, key=lambda position: (int(tokens[position]), position))
        if int(tokens[smallest]) - remaining < remaining:
            last.append(smallest)
    picked = np.concatenate([*chosen, np.array(last, dtype=np.int64)])
    return picked, float(tokens[picked].sum()) / total


def mix(pairs: list[tuple[str, str]], out_dir: str, vocab_size: int, config: MixtureConfig) -> dict:
    columns = sorted({column for source in config.sources for column in source.where})
    catalog = build_catalog(pairs, columns, config.seed)
    validation = is_heldout(catalog.hashes, config.validation_fraction)
    by_hash = np.argsort(catalog.hashes, kind="stable")
    weights = config.weights()
    any_source = np.zeros(catalog.tokens.size, dtype=bool)
    train_docs, rows = [], []
    for index, source in enumerate(config.sources):
        selected = selects(catalog, source)
        any_source |= selected
        members = by_hash[(selected & ~validation)[by_hash]]
        available = int(catalog.tokens[members].sum())
        target = round(weights[source.name] * config.token_budget)
        if members.size == 0:
            raise ValueError(f"mixture source {source.name!r} selects no training documents (where={source.where})")
        if target > available * source.max_epochs:
            raise ValueError(f"mixture source {source.name!r} needs {target:,} tokens ({weights[source.name]:.1%} of "
                             f"{config.token_budget:,}) but has {available:,} in {members.size} documents: at most "
                             f"{source.max_epochs} epochs give {int(available * source.max_epochs):,}")
        picked, epochs = draw(catalog.tokens[members], target, np.random.default_rng([config.seed, index]))
        train_docs.append(members[picked])
        rows.append({"source": source.name, "weight_requested": round(weights[source.name], 6),
                     "tokens_requested": target, "tokens_available": available,
                     "documents_available": int(members.size), "documents_drawn": int(picked.size),
                     "tokens_realized": int(catalog.tokens[members[picked]].sum()), "epochs": round(epochs, 4)})
    realized = sum(row["tokens_realized"] for row in rows)
    for row in rows:
        row["weight_realized"] = round(row["tokens_realized"] / realized, 6)

    stream = np.concatenate(train_docs)
    stream = stream[np.random.default_rng([config.seed, len(config.sources)]).permutation(stream.size)]
    val = by_hash[(validation & any_source)[by_hash]]
    shards = (_write(catalog, stream, f"{out_dir}/{TRAIN_SPLIT}", vocab_size, config.shard_tokens)
              + _write(catalog, val, f"{out_dir}/{VALIDATION_SPLIT}", vocab_size, config.shard_tokens))
    return {"sources": rows, "train_tokens": realized, "train_documents": int(stream.size),
            "validation_tokens": int(catalog.tokens[val].sum()), "validation_documents": int(val.size),
            "max_abs_weight_error": round(max(abs(r["weight_realized"] - r["weight_requested"]) for r in rows), 6),
            "shards": shards}


def _write(catalog: Catalog, documents: np.ndarray, prefix: str, vocab_size: int, shard_tokens: int) -> list[dict]:
    """Documents in the given order into `<prefix>.<NNNNN>` token shards of at most `shard_tokens` tokens (a
    single longer document gets a shard of its own)."""
    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    written, writer, filled = [], None, 0
    for document in documents.tolist():
        tokens = catalog.shards[catalog.shard[document]].document(int(catalog.row[document]))
        if writer is None or (filled and filled + tokens.size > shard_tokens):
            if writer is not None:
                written.append(_closed(writer))
            writer, filled = TokenShardWriter(f"{prefix}.{len(written):05d}", vocab_size), 0
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
