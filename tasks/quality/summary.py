"""The corpus-level figures the quality filter needs: perplexity bucket edges per language, the classifier's
threshold for keep-top-k%, and histograms of the attributes the thresholds read. They come from sketches made
while scoring, so the filter stage, which reruns whenever a threshold changes, does not read the attribute
columns again for them:

1. per shard, the scoring call sketches the columns it has just computed (`shard_sketch`, saved beside the
   scored shard): for each ranked value (log10 perplexity per language, the classifier's probability on a logit
   scale) the occupied bins of RANK_BINS fixed bins with each bin's count, smallest and largest value; for each
   charted attribute its counts over CHART_BINS fixed bins of its domain, and how many documents lack it;
2. the scores stage adds the shards' sketches up as their calls finish (`Sketch.add`: what it holds is bounded
   by the bins, not the corpus) and saves the sum beside its shards (SKETCH_FILE);
3. the filter reads that one file. An order statistic that is the smallest or largest value of its bin is read
   off the sketch; only one that falls inside a bin of three or more values needs that bin's values, found by
   one pass over the scored shards' ranked columns (fanned out on the Dask cluster). The charts group the fixed
   bins into at most BINS bars over the occupied range.

Error bound: none for the cut points: they are the numbers a sort of the whole corpus gives (np.percentile's
linear interpolation, the k-th highest probability). Each chart is np.histogram's over its own edges, which lie on
its attribute's fixed grid (domain / CHART_BINS) rather than dividing the data's range evenly; a value beyond its
attribute's domain is counted in the end bin nearest to it.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa

from configs.quality import QualityConfig
from storage.arrays import load_arrays, save_arrays
from storage.document_shard import read_documents
from tasks.fan_out import completed
from tasks.quality.families import histogram_domains, histogram_scales

HISTOGRAMS = histogram_scales()      # attribute -> binned on a log10 scale
DOMAINS = histogram_domains()        # attribute -> (low, high) on its chart's scale
BINS = 40                            # bars per chart, at most
CHART_BINS = 1 << 12                 # fixed bins per charted attribute (the domains' widths make the edges exact)
RANK_BINS = 1 << 16                  # per ranked value: its order statistics are found within one bin
CALL_SHARDS = 8                      # shards per call of the crowded bins' pass: one shard takes a few ms
PERPLEXITY = "kenlm_ppl"
PROBABILITY = "hq_prob"
SKETCH_SUFFIX = ".sketch.npz"        # a scored shard's sketch, beside it
SKETCH_FILE = "attribute_sketch.npz"  # the scores stage's sum of them


def _rank_position(name: str, values: np.ndarray) -> np.ndarray:
    """A monotone map into [0, 1]: log10 perplexity over 1 to 1e12, or the probability's logit over -30 to 30
    (values beyond either end share its last bin)."""
    if name == PERPLEXITY:
        scaled = np.log10(np.maximum(values, 1.0)) / 12.0
    else:
        clipped = np.clip(values, 1e-13, 1 - 1e-13)
        scaled = (np.log(clipped / (1 - clipped)) + 30.0) / 60.0
    return np.clip(scaled, 0.0, 1.0)


def _rank_bins(name: str, values: np.ndarray) -> np.ndarray:
    return np.minimum((_rank_position(name, values) * RANK_BINS).astype(np.int64), RANK_BINS - 1)


def _chart_edges(name: str, indices: np.ndarray) -> np.ndarray:
    """The edges of an attribute's fixed bins at `indices` (computed one way everywhere, so they compare equal)."""
    low, high = DOMAINS[name]
    return low + indices * ((high - low) / CHART_BINS)


def _chart_bins(name: str, values: np.ndarray) -> np.ndarray:
    """Each value's fixed bin: the last edge at or below it, as np.histogram places it (the top edge closes the
    last bin); values beyond the domain go to the end bins."""
    edges = _chart_edges(name, np.arange(CHART_BINS + 1))
    return np.clip(np.searchsorted(edges, values, side="right") - 1, 0, CHART_BINS - 1)


@dataclass
class RankedBins:
    """The occupied rank bins of one ranked value, in bin order: each one's count, smallest and largest value."""
    bins: np.ndarray
    counts: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, name: str, values: np.ndarray) -> RankedBins:
        index = _rank_bins(name, values)
        order = np.lexsort((values, index))
        index, values = index[order], values[order]
        bins, first, counts = np.unique(index, return_index=True, return_counts=True)
        return cls(bins, counts, values[first], values[first + counts - 1])

    def merged(self, other: RankedBins) -> RankedBins:
        bins, where = np.unique(np.concatenate([self.bins, other.bins]), return_inverse=True)
        counts, low, high = np.zeros(bins.size, np.int64), np.full(bins.size, np.inf), np.full(bins.size, -np.inf)
        np.add.at(counts, where, np.concatenate([self.counts, other.counts]))
        np.minimum.at(low, where, np.concatenate([self.low, other.low]))
        np.maximum.at(high, where, np.concatenate([self.high, other.high]))
        return RankedBins(bins, counts, low, high)


@dataclass
class Sketch:
    """Per ranked key ((attribute, language or "")) its occupied rank bins; per charted attribute its counts over
    its fixed bins and its missing count. Sketches of any shards add up to the sketch of all of them."""
    ranked: dict[tuple[str, str], RankedBins] = field(default_factory=dict)
    charts: dict[str, np.ndarray] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)

    def add(self, other: Sketch) -> Sketch:
        for key, bins in other.ranked.items():
            self.ranked[key] = self.ranked[key].merged(bins) if key in self.ranked else bins
        for name, counts in other.charts.items():
            self.charts[name] = self.charts[name] + counts if name in self.charts else counts
        for name, count in other.missing.items():
            self.missing[name] = self.missing.get(name, 0) + count
        return self

    def save(self, url: str) -> None:
        arrays = {f"ranked|{name}|{lang}|{part}": getattr(bins, part) for (name, lang), bins in self.ranked.items()
                  for part in ("bins", "counts", "low", "high")}
        arrays |= {f"chart|{name}": counts for name, counts in self.charts.items()}
        arrays |= {f"missing|{name}": np.array(count) for name, count in self.missing.items()}
        save_arrays(arrays, url)

    @classmethod
    def load(cls, url: str) -> Sketch:
        sketch, parts = cls(), defaultdict(dict)
        for key, array in load_arrays(url).items():
            kind, name, *rest = key.split("|")
            if kind == "ranked":
                parts[(name, rest[0])][rest[1]] = array
            elif kind == "chart":
                sketch.charts[name] = array
            else:
                sketch.missing[name] = int(array)
        sketch.ranked = {key: RankedBins(**columns) for key, columns in parts.items()}
        return sketch


def _floats(table: pa.Table, name: str) -> np.ndarray:
    return np.array([np.nan if value is None else float(value) for value in table.column(name).to_pylist()])


def _ranked(table: pa.Table) -> dict[tuple[str, str], np.ndarray]:
    """The ranked values present, per key: the probability, and the perplexity per language."""
    perplexity, probability = _floats(table, PERPLEXITY), _floats(table, PROBABILITY)
    langs = np.array(table.column("lang").to_pylist(), dtype=object)
    ranked = {(PROBABILITY, ""): probability[~np.isnan(probability)]}
    for lang in {lang for lang in langs.tolist() if lang}:
        scored = perplexity[(langs == lang) & ~np.isnan(perplexity)]
        if scored.size:
            ranked[(PERPLEXITY, lang)] = scored
    return ranked


def shard_sketch(table: pa.Table) -> Sketch:
    """The sketch of one scored shard (its `lang` and attribute columns)."""
    sketch = Sketch(ranked={key: RankedBins.of(key[0], values) for key, values in _ranked(table).items()})
    for name, log in HISTOGRAMS.items():
        values = _floats(table, name)
        finite = values[~np.isnan(values)]
        sketch.charts[name] = np.bincount(_chart_bins(name, np.log10(np.maximum(finite, 1.0)) if log else finite),
                                          minlength=CHART_BINS)
        sketch.missing[name] = int(values.size - finite.size)
    return sketch


def values_in_bins(url: str, wanted: dict[tuple[str, str], list[int]]) -> dict:
    """This shard's ranked values in the wanted bins, per key and bin."""
    ranked = _ranked(read_documents(url, columns=["lang", PERPLEXITY, PROBABILITY]))
    found = {}
    for key, bins in wanted.items():
        values = ranked.get(key, np.array([]))
        in_bin = _rank_bins(key[0], values)
        found[key] = {index: values[in_bin == index] for index in bins}
    return found


class OrderStatistics:
    """The k-th smallest values of one ranked key: its bins' counts say which bin holds rank k; the bin's smallest
    or largest value, when rank k is one of those, or else the bin's values (`crowded`)."""

    def __init__(self, bins: RankedBins):
        self.bins = bins
        self.size = int(bins.counts.sum())
        self.below = np.concatenate([[0], np.cumsum(bins.counts)])      # values in the bins before each bin

    def _position(self, rank: int) -> tuple[int, int]:
        """(which occupied bin, rank within it)"""
        position = int(np.searchsorted(self.below, rank, side="right")) - 1
        return position, rank - int(self.below[position])

    def crowded(self, rank: int) -> int | None:
        """The bin whose values rank k needs, or None when the sketch knows it."""
        position, within = self._position(rank)
        return None if within in (0, self.bins.counts[position] - 1) else int(self.bins.bins[position])

    def value(self, rank: int, in_bins: dict[int, np.ndarray]) -> float:
        """Rank k's value; `in_bins` holds the values of the crowded bins."""
        position, within = self._position(rank)
        crowded = self.crowded(rank)
        if crowded is not None:
            return float(np.sort(in_bins[crowded])[within])
        return float((self.bins.low if within == 0 else self.bins.high)[position])


def summarize_attributes(sketch: Sketch, shard_urls: list[str], config: QualityConfig) -> dict:
    """The cutoffs and charts from the corpus's sketch; `shard_urls` (the scored shards) are read only for the
    values of crowded bins."""
    statistics = {key: OrderStatistics(bins) for key, bins in sketch.ranked.items()}
    ranks = {key: _wanted_ranks(key, stats.size, config) for key, stats in statistics.items()}
    crowded = {key: sorted({statistics[key].crowded(rank) for rank in key_ranks} - {None})
               for key, key_ranks in ranks.items()}
    in_bins = _values_in_bins(shard_urls, {key: bins for key, bins in crowded.items() if bins})
    values = {key: {rank: statistics[key].value(rank, in_bins.get(key, {})) for rank in key_ranks}
              for key, key_ranks in ranks.items()}
    return {"kenlm_bucket_edges": _bucket_edges(statistics, values, config.kenlm.bucket_percentiles),
            "classifier_min_hq_prob": _classifier_threshold(statistics, values, config),
            "histograms": {name: _histogram(name, sketch.charts.get(name), log, sketch.missing.get(name, 0))
                           for name, log in HISTOGRAMS.items()}}


def _values_in_bins(shard_urls: list[str], wanted: dict[tuple[str, str], list[int]]) -> dict:
    """Every shard's values in the wanted bins, per key and bin (no pass when none are wanted)."""
    parts: dict = defaultdict(lambda: defaultdict(list))
    if wanted:
        for _, found in completed(partial(values_in_bins, wanted=wanted), shard_urls, CALL_SHARDS):
            for key, by_bin in found.items():
                for index, values in by_bin.items():
                    parts[key][index].append(values)
    return {key: {index: np.concatenate(values) for index, values in by_bin.items()} for key, by_bin in parts.items()}


def _percentile_ranks(size: int, percentile: float) -> tuple[int, int, float]:
    """np.percentile's linear interpolation: the two order statistics around p (n - 1) and the weight."""
    position = percentile / 100 * (size - 1)
    low = int(np.floor(position))
    return low, min(low + 1, size - 1), position - low


def _top_rank(size: int, fraction: float) -> int:
    """The rank (ascending) of the k-th highest of `size` values, k = the fraction rounded, at least 1."""
    return size - max(1, int(round(fraction * size)))


def _wanted_ranks(key: tuple[str, str], size: int, config: QualityConfig) -> set[int]:
    if key[0] == PERPLEXITY:
        return {rank for p in config.kenlm.bucket_percentiles for rank in _percentile_ranks(size, p)[:2]}
    fraction = config.filter.classifier.keep_top_fraction
    return {_top_rank(size, fraction)} if fraction is not None and size else set()


def _bucket_edges(statistics: dict, values: dict, percentiles) -> dict[str, list[float]]:
    edges = {}
    for (name, lang), stats in sorted(statistics.items()):
        if name != PERPLEXITY:
            continue
        lang_edges = []
        for percentile in percentiles:
            low, high, weight = _percentile_ranks(stats.size, percentile)
            a, b = values[(name, lang)][low], values[(name, lang)][high]
            # numpy's lerp: from the nearer end, so that weight 1 gives b exactly
            lang_edges.append(round(float(b - (b - a) * (1 - weight) if weight >= 0.5 else a + (b - a) * weight), 3))
        edges[lang] = lang_edges
    return edges


def _classifier_threshold(statistics: dict, values: dict, config: QualityConfig) -> float | None:
    """The stricter of `min_hq_prob` and the probability that keeps the top fraction of scored documents (the
    k-th highest: ties at the boundary are all kept)."""
    thresholds = config.filter.classifier
    candidates = [thresholds.min_hq_prob] if thresholds.min_hq_prob is not None else []
    size = statistics[(PROBABILITY, "")].size if (PROBABILITY, "") in statistics else 0
    if thresholds.keep_top_fraction is not None and size:
        candidates.append(values[(PROBABILITY, "")][_top_rank(size, thresholds.keep_top_fraction)])
    return max(candidates) if candidates else None


def _histogram(name: str, counts: np.ndarray | None, log: bool, missing: int) -> dict:
    """At most BINS bars, each a run of whole fixed bins, from the first occupied fixed bin to the last."""
    occupied = np.flatnonzero(counts) if counts is not None else np.array([], np.int64)
    if not occupied.size:
        return {"counts": [], "edges": [], "log10": log, "missing": missing}
    first, span = int(occupied[0]), int(occupied[-1] - occupied[0]) + 1
    per_bar = -(-span // BINS)
    bars = -(-span // per_bar)
    runs = np.zeros(bars * per_bar, np.int64)
    runs[:span] = counts[first:first + span]
    edges = _chart_edges(name, first + per_bar * np.arange(bars + 1))
    return {"counts": runs.reshape(bars, per_bar).sum(axis=1).tolist(), "edges": [float(edge) for edge in edges],
            "log10": log, "missing": missing}
