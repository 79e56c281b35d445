"""Which pieces of which documents a source draws, decided piece by piece from per-shard counts.

The unit of the draw is a piece: a document's tokens cut into `chunk_tokens`-token chunks (the last one shorter;
a short document is one piece). Drawing pieces rather than whole documents keeps the expected mixture and stops
one document from deciding a run: raw crawl text has giant pages (forum listings, FAQs of 25-50k words) that are
each several percent of a small budget, and a whole-document draw makes a run's data, and its score, hinge on
whether it took them. Cut into pieces, such a page is drawn in proportion, and the draw's variance is the data's.

Every piece gets, per source, a point u in [0, 1): a hash of (seed, source, id, chunk). A source of A training
tokens and a target of T takes each of its pieces floor(T / A) times (whole epochs), and once more those whose u
falls under a cut: the last boundary of 2^20 bins of u at or under the target, found from histograms of tokens
per bin counted per token shard and summed. The gap the cut leaves (under one piece) is filled from the next
FILL_WINDOW pieces in u order, every one that still fits, as a whole-corpus draw would. No step holds more than
one shard's documents (or the window's), and a piece's draws depend on its document's id, its place in the
document and the config alone, never on the shard it sits in. So two variants that hold the same document draw
its pieces alike for one seed (the draws are coupled), and the pieces a smaller variant draws of a shared
document are among those a larger one draws when its cut is higher.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from configs.mixture import MixtureConfig, MixtureSource
from storage.document_shard import read_documents
from storage.token_shard import TokenShard
from tasks.dedup.normalize import key64
from tasks.errors import TooLittleData
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
    for column, allowed in source.where.items():     # compared as text: `topic: [3]` and `topic: ["3"]` alike
        mask &= np.isin(values[column].astype(str), [str(value) for value in allowed])
    return mask


@dataclass
class Pieces:
    """One source's training pieces in a shard, in document order: each piece's document row, chunk index
    within its document, and tokens."""
    rows: np.ndarray
    chunks: np.ndarray
    tokens: np.ndarray

    def starts(self, chunk_tokens: int) -> np.ndarray:
        """Each piece's first token within its document."""
        return self.chunks * chunk_tokens


def source_pieces(docs: ShardDocuments, source: int, chunk_tokens: int) -> Pieces:
    """The pieces of the documents `source` selects for training: chunks of at most `chunk_tokens` tokens."""
    rows = np.flatnonzero(docs.training[source])
    lengths = docs.tokens[rows]
    counts = np.maximum(1, -(-lengths // chunk_tokens))
    piece_rows = np.repeat(rows, counts)
    chunks = np.arange(piece_rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return Pieces(piece_rows, chunks, np.minimum(chunk_tokens, np.repeat(lengths, counts) - chunks * chunk_tokens))


def selection_points(docs: ShardDocuments, pieces: Pieces, seed: int, source: int) -> np.ndarray:
    """Each piece's point for a source, as 64 bits (u = point / 2^64); its top bits are its bin."""
    return hashes64([f"{seed}\0{source}\0{docs.ids[row]}\0{chunk}"
                     for row, chunk in zip(pieces.rows.tolist(), pieces.chunks.tolist())])


def bins_of(points: np.ndarray) -> np.ndarray:
    return (points >> np.uint64(64 - BIN_BITS)).astype(np.int64)


@dataclass
class ShardCount:
    """Per source, the training tokens and pieces per bin of u (sparse), and the shard's validation share."""
    bins: list[np.ndarray]
    tokens: list[np.ndarray]
    pieces: list[np.ndarray]
    validation_tokens: int
    validation_documents: int


def count_shard(pair: tuple[str, str], config: MixtureConfig) -> ShardCount:
    docs = read_shard(pair, config)
    bins, tokens, pieces = [], [], []
    for index in range(len(docs.training)):
        members = source_pieces(docs, index, config.chunk_tokens)
        found, inverse = np.unique(bins_of(selection_points(docs, members, config.seed, index)), return_inverse=True)
        bins.append(found)
        tokens.append(np.bincount(inverse, weights=members.tokens, minlength=found.size).astype(np.int64))
        pieces.append(np.bincount(inverse, minlength=found.size).astype(np.int64))
    return ShardCount(bins, tokens, pieces, int(docs.tokens[docs.validation].sum()),
                      int(docs.validation.sum()))


@dataclass
class SourceDraw:
    """A source's draw: every piece `whole_epochs` times, plus once those whose bin is below `cut` and those of
    the fill window (bins `cut` to `window_end`) whose points are in `fill`."""
    available: int
    pieces: int
    target: int
    whole_epochs: int
    cut: int
    cut_tokens: int
    cut_pieces: int
    window_end: int
    fill: frozenset[int] = frozenset()
    fill_tokens: int = 0

    @property
    def gap(self) -> int:
        """Tokens the target still wants after the whole epochs and the cut (under one piece)."""
        return self.target - self.whole_epochs * self.available - self.cut_tokens

    @property
    def tokens(self) -> int:
        return self.whole_epochs * self.available + self.cut_tokens + self.fill_tokens

    @property
    def pieces_drawn(self) -> int:
        return self.whole_epochs * self.pieces + self.cut_pieces + len(self.fill)

    def drawn_last_epoch(self, points: np.ndarray) -> np.ndarray:
        extra = np.isin(points, np.fromiter(self.fill, np.uint64, len(self.fill)))
        return (bins_of(points) < self.cut) | extra


FILL_WINDOW = 256     # pieces past the cut offered to fill the gap (the gap is under one piece)


def plan_draws(counts: list[ShardCount], config: MixtureConfig) -> list[SourceDraw]:
    """Each source's whole epochs and cut, from the summed counts: the cut is the last bin boundary at or under
    the target; the fill window holds the next FILL_WINDOW pieces. Only the occupied bins are summed (a dense
    array of 2^20 bins per source took ~25 ms in the flow process, between two passes)."""
    weights = config.weights()
    draws = []
    for index, source in enumerate(config.sources):
        bins, slot = np.unique(np.concatenate([count.bins[index] for count in counts]), return_inverse=True)
        tokens, pieces = np.zeros(bins.size, np.int64), np.zeros(bins.size, np.int64)
        np.add.at(tokens, slot, np.concatenate([count.tokens[index] for count in counts]))
        np.add.at(pieces, slot, np.concatenate([count.pieces[index] for count in counts]))
        available, members = int(tokens.sum()), int(pieces.sum())
        target = round(weights[source.name] * config.token_budget)
        if members == 0:
            raise TooLittleData(f"mixture source {source.name!r} selects no training documents of the filtered "
                                f"corpus (mixture.sources[{index}].where = {source.where}): widen its `where`, add "
                                f"input, or remove the source")
        if target > available * source.max_epochs:
            raise TooLittleData(f"mixture source {source.name!r} needs {target:,} tokens ({weights[source.name]:.1%} "
                                f"of {config.token_budget:,}) but has {available:,} in {members} pieces: at most "
                                f"{source.max_epochs} epochs give {int(available * source.max_epochs):,}; lower "
                                f"mixture.token_budget or its weight, raise mixture.sources[{index}].max_epochs, or "
                                f"add input")
        whole, remaining = divmod(target, available)
        tokens_through, pieces_through = np.cumsum(tokens), np.cumsum(pieces)   # up to each bin, inclusive
        # the cut: the first occupied bin whose tokens would overshoot (each boundary up to it has at most `remaining`)
        over = int(np.searchsorted(tokens_through, remaining, side="right"))
        cut = int(bins[over]) if over < bins.size else BINS
        cut_tokens = int(tokens_through[over - 1]) if over else 0
        cut_pieces = int(pieces_through[over - 1]) if over else 0
        # the window ends past the bin in which the pieces from the cut on reach FILL_WINDOW
        last = int(np.searchsorted(pieces_through, cut_pieces + FILL_WINDOW))
        window_end = int(bins[last]) + 1 if last < bins.size else BINS
        draws.append(SourceDraw(available, members, target, whole, cut, cut_tokens, cut_pieces, window_end))
    return draws


def fill_candidates(pair: tuple[str, str], config: MixtureConfig, draws: list[SourceDraw]) -> list[np.ndarray]:
    """Per source, (point, tokens) of this shard's training pieces in the fill window."""
    docs = read_shard(pair, config)
    found = []
    for index, draw in enumerate(draws):
        members = source_pieces(docs, index, config.chunk_tokens)
        points = selection_points(docs, members, config.seed, index)
        bins = bins_of(points)
        inside = (bins >= draw.cut) & (bins < draw.window_end)
        found.append(np.stack([points[inside], members.tokens[inside].astype(np.uint64)], axis=1))
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
    """The data card's rows: requested and realized tokens, pieces and weights per source."""
    weights = config.weights()
    realized = sum(draw.tokens for draw in draws)
    return [{"source": source.name, "weight_requested": round(weights[source.name], 6),
             "tokens_requested": draw.target, "tokens_available": draw.available,
             "pieces_available": draw.pieces, "pieces_drawn": draw.pieces_drawn,
             "tokens_realized": draw.tokens, "epochs": round(draw.tokens / draw.available, 4),
             "weight_realized": round(draw.tokens / realized, 6)}
            for source, draw in zip(config.sources, draws)]
