"""Which documents a source draws, decided document by document from per-shard counts.

Every document gets, per source, a point u in [0, 1): a hash of (seed, source, id). A source of A training
tokens and a target of T takes each of its documents floor(T / A) times (whole epochs), and once more those
whose u falls under a cut: the last boundary of 2^20 bins of u at or under the target, found from histograms of
tokens per bin counted per token shard and summed. The gap the cut leaves (under one document) is filled from
the next FILL_WINDOW documents in u order, every one that still fits, as a whole-corpus draw would. No step
holds more than one shard's documents (or the window's), and a document's draws depend on its id and the
config alone, never on the shard it sits in.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from configs.mixture import MixtureConfig, MixtureSource
from storage.document_shard import read_documents
from storage.token_shard import TokenShard
from tasks.dedup.normalize import key64
from tasks.tokenize.sample import document_hashes, is_heldout

BIN_BITS = 20
BINS = 1 << BIN_BITS


def hashes64(keys: list[str]) -> np.ndarray:
    """Unsigned 64-bit hashes of strings (uniform: their top bits pick bins and partitions)."""
    return np.array([key64(key) for key in keys], dtype=np.int64).view(np.uint64)


@dataclass
class ShardDocuments:
    """One token shard's documents: their tokens, ids, split and which sources select them for training."""
    tokens: np.ndarray
    ids: list[str]
    order_keys: np.ndarray        # the seeded document hash: validation's order
    validation: np.ndarray
    training: list[np.ndarray]    # per source: selected and not held out


def read_shard(pair: tuple[str, str], config: MixtureConfig) -> ShardDocuments:
    """`pair`: (token shard base, document shard URL) with the documents in the same order in both."""
    token_base, document_url = pair
    shard = TokenShard(token_base)
    columns = sorted({column for source in config.sources for column in source.where})
    table = read_documents(document_url, ["id", *columns])
    if table.num_rows != len(shard):
        raise ValueError(f"{token_base}: {len(shard)} token documents for {table.num_rows} in {document_url}")
    ids = table.column("id").to_pylist()
    hashes = document_hashes(ids, config.seed)
    heldout = is_heldout(hashes, config.validation_fraction)
    values = {column: np.array(table.column(column).to_pylist(), dtype=object) for column in columns}
    selected = [_selects(values, source, len(ids)) for source in config.sources]
    any_source = np.logical_or.reduce(selected) if selected else np.zeros(len(ids), bool)
    return ShardDocuments(np.diff(np.asarray(shard.offsets)).astype(np.int64), ids, hashes.view(np.uint64),
                          heldout & any_source, [mask & ~heldout for mask in selected])


def _selects(values: dict[str, np.ndarray], source: MixtureSource, count: int) -> np.ndarray:
    mask = np.ones(count, dtype=bool)
    for column, allowed in source.where.items():
        mask &= np.isin(values[column], allowed)
    return mask


def selection_points(ids: list[str], seed: int, source: int) -> np.ndarray:
    """Each document's point for a source, as 64 bits (u = point / 2^64); its top bits are its bin."""
    return hashes64([f"{seed}\0{source}\0{doc_id}" for doc_id in ids])


def bins_of(points: np.ndarray) -> np.ndarray:
    return (points >> np.uint64(64 - BIN_BITS)).astype(np.int64)


@dataclass
class ShardCount:
    """Per source, the training tokens and documents per bin of u (sparse), and the shard's validation share."""
    bins: list[np.ndarray]
    tokens: list[np.ndarray]
    documents: list[np.ndarray]
    validation_tokens: int
    validation_documents: int


def count_shard(pair: tuple[str, str], config: MixtureConfig) -> ShardCount:
    docs = read_shard(pair, config)
    bins, tokens, documents = [], [], []
    for index, members in enumerate(docs.training):
        where = np.flatnonzero(members)
        found, inverse = np.unique(bins_of(selection_points([docs.ids[i] for i in where], config.seed, index)),
                                   return_inverse=True)
        bins.append(found)
        tokens.append(np.bincount(inverse, weights=docs.tokens[where], minlength=found.size).astype(np.int64))
        documents.append(np.bincount(inverse, minlength=found.size).astype(np.int64))
    return ShardCount(bins, tokens, documents, int(docs.tokens[docs.validation].sum()),
                      int(docs.validation.sum()))


@dataclass
class SourceDraw:
    """A source's draw: every document `whole_epochs` times, plus once those whose bin is below `cut` and those
    of the fill window (bins `cut` to `window_end`) whose points are in `fill`."""
    available: int
    documents: int
    target: int
    whole_epochs: int
    cut: int
    cut_tokens: int
    cut_documents: int
    window_end: int
    fill: frozenset[int] = frozenset()
    fill_tokens: int = 0

    @property
    def gap(self) -> int:
        """Tokens the target still wants after the whole epochs and the cut (under one document)."""
        return self.target - self.whole_epochs * self.available - self.cut_tokens

    @property
    def tokens(self) -> int:
        return self.whole_epochs * self.available + self.cut_tokens + self.fill_tokens

    @property
    def documents_drawn(self) -> int:
        return self.whole_epochs * self.documents + self.cut_documents + len(self.fill)

    def drawn_last_epoch(self, points: np.ndarray) -> np.ndarray:
        extra = np.isin(points, np.fromiter(self.fill, np.uint64, len(self.fill)))
        return (bins_of(points) < self.cut) | extra


FILL_WINDOW = 256     # documents past the cut offered to fill the gap (the gap is under one document)


def plan_draws(counts: list[ShardCount], config: MixtureConfig) -> list[SourceDraw]:
    """Each source's whole epochs and cut, from the summed counts: the cut is the last bin boundary at or under
    the target; the fill window holds the next FILL_WINDOW documents. Only the occupied bins are summed (a dense
    array of 2^20 bins per source took ~25 ms in the flow process, between two passes)."""
    weights = config.weights()
    draws = []
    for index, source in enumerate(config.sources):
        bins, slot = np.unique(np.concatenate([count.bins[index] for count in counts]), return_inverse=True)
        tokens, documents = np.zeros(bins.size, np.int64), np.zeros(bins.size, np.int64)
        np.add.at(tokens, slot, np.concatenate([count.tokens[index] for count in counts]))
        np.add.at(documents, slot, np.concatenate([count.documents[index] for count in counts]))
        available, members = int(tokens.sum()), int(documents.sum())
        target = round(weights[source.name] * config.token_budget)
        if members == 0:
            raise ValueError(f"mixture source {source.name!r} selects no training documents (where={source.where})")
        if target > available * source.max_epochs:
            raise ValueError(f"mixture source {source.name!r} needs {target:,} tokens ({weights[source.name]:.1%} of "
                             f"{config.token_budget:,}) but has {available:,} in {members} documents: at most "
                             f"{source.max_epochs} epochs give {int(available * source.max_epochs):,}")
        whole, remaining = divmod(target, available)
        tokens_through, documents_through = np.cumsum(tokens), np.cumsum(documents)   # up to each bin, inclusive
        # the cut: the first occupied bin whose tokens would overshoot (each boundary up to it has at most `remaining`)
        over = int(np.searchsorted(tokens_through, remaining, side="right"))
        cut = int(bins[over]) if over < bins.size else BINS
        cut_tokens = int(tokens_through[over - 1]) if over else 0
        cut_documents = int(documents_through[over - 1]) if over else 0
        # the window ends past the bin in which the documents from the cut on reach FILL_WINDOW
        last = int(np.searchsorted(documents_through, cut_documents + FILL_WINDOW))
        window_end = int(bins[last]) + 1 if last < bins.size else BINS
        draws.append(SourceDraw(available, members, target, whole, cut, cut_tokens, cut_documents, window_end))
    return draws


def fill_candidates(pair: tuple[str, str], config: MixtureConfig, draws: list[SourceDraw]) -> list[np.ndarray]:
    """Per source, (point, tokens) of this shard's training documents in the fill window."""
    docs = read_shard(pair, config)
    found = []
    for index, (members, draw) in enumerate(zip(docs.training, draws)):
        where = np.flatnonzero(members)
        points = selection_points([docs.ids[i] for i in where], config.seed, index)
        bins = bins_of(points)
        inside = (bins >= draw.cut) & (bins < draw.window_end)
        found.append(np.stack([points[inside], docs.tokens[where][inside].astype(np.uint64)], axis=1))
    return found


def fill_gaps(draws: list[SourceDraw], candidates: list[list[np.ndarray]]) -> list[SourceDraw]:
    """Each source's gap after the cut filled from its window in point order: every document that still fits,
    then the smallest other one if that lands closer."""
    filled = []
    for index, draw in enumerate(draws):
        offered = np.concatenate([shard[index] for shard in candidates])
        offered = offered[np.argsort(offered[:, 0], kind="stable")]
        remaining = draw.gap
        taken, left_out = [], []
        for point, tokens in offered.tolist():
            if tokens <= remaining:
                taken.append(point)
                remaining -= tokens
            else:
                left_out.append((tokens, point))
        smallest = min(left_out, default=None)              # (tokens, point)
        if remaining > 0 and smallest and smallest[0] - remaining < remaining:
            taken.append(smallest[1])
            remaining -= smallest[0]
        filled.append(replace(draw, fill=frozenset(taken), fill_tokens=draw.gap - remaining))
    return filled


def card_rows(draws: list[SourceDraw], config: MixtureConfig) -> list[dict]:
    """The data card's rows: requested and realized tokens, documents and weights per source."""
    weights = config.weights()
    realized = sum(draw.tokens for draw in draws)
    return [{"source": source.name, "weight_requested": round(weights[source.name], 6),
             "tokens_requested": draw.target, "tokens_available": draw.available,
             "documents_available": draw.documents, "documents_drawn": draw.documents_drawn,
             "tokens_realized": draw.tokens, "epochs": round(draw.tokens / draw.available, 4),
             "weight_realized": round(draw.tokens / realized, 6)}
            for source, draw in zip(config.sources, draws)]
