"""The corpus-level pass before filtering: perplexity bucket edges per language, the classifier's threshold for
keep-top-k%, and histograms of the attributes the thresholds read. It reads attribute columns only, a few shards
per call, in two passes whose per-shard results merge by addition as they arrive (fanned out on the Dask cluster,
so the flow process holds one call's sketches at a time, not the corpus's):

1. sketch: per shard, counts over RANK_BINS fixed bins of each ranked value (log10 perplexity per language,
   the classifier's probability on a logit scale), and each charted attribute's range and missing count;
2. boundaries: per shard, the values that fall in the bins holding the wanted order statistics, and the
   charted attributes' counts over the corpus-wide chart edges.

Error bound: none. The thresholds are the numbers a sort of the whole corpus gives (np.percentile's linear
interpolation, the k-th highest probability) and the charts are np.histogram's. A task holds one shard's
columns, or the values of the few bins that hold a wanted order statistic.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from configs.quality import QualityConfig
from storage.document_shard import read_documents
from tasks.fan_out import completed
from tasks.quality.families import histogram_scales

HISTOGRAMS = histogram_scales()      # attribute -> binned on a log10 scale
BINS = 40                            # per chart
RANK_BINS = 1 << 16                  # per ranked value: its order statistics are found within one bin
CALL_SHARDS = 8                      # shards per call: one shard's pass takes a few ms, about a Dask round trip
PERPLEXITY = "kenlm_ppl"
PROBABILITY = "hq_prob"


def _rank_position(name: str, values: np.ndarray) -> np.ndarray:
    """A monotone map into [0, 1]: log10 perplexity over 1 to 1e12, or the probability's logit over -30 to 30
    (values beyond either end share its last bin, which only makes that bin's second pass larger)."""
    if name == PERPLEXITY:
        scaled = np.log10(np.maximum(values, 1.0)) / 12.0
    else:
        clipped = np.clip(values, 1e-13, 1 - 1e-13)
        scaled = (np.log(clipped / (1 - clipped)) + 30.0) / 60.0
    return np.clip(scaled, 0.0, 1.0)


def _rank_bins(name: str, values: np.ndarray) -> np.ndarray:
    return np.minimum((_rank_position(name, values) * RANK_BINS).astype(np.int64), RANK_BINS - 1)


@dataclass
class Shard:
    """One shard's ranked values (per key: (attribute, language or "")) and charted attributes."""
    ranked: dict[tuple[str, str], np.ndarray]
    charted: dict[str, np.ndarray]       # on the chart's scale (log10 where the chart is), NaN where missing


def _read(url: str) -> Shard:
    columns = list(dict.fromkeys([PERPLEXITY, PROBABILITY, *HISTOGRAMS]))
    table = read_documents(url, columns=["lang", *columns])
    values = {name: np.array([np.nan if value is None else float(value) for value in table.column(name).to_pylist()])
              for name in columns}
    langs = np.array(table.column("lang").to_pylist(), dtype=object)
    ranked = {(PROBABILITY, ""): values[PROBABILITY][~np.isnan(values[PROBABILITY])]}
    for lang in {lang for lang in langs.tolist() if lang}:
        scored = values[PERPLEXITY][(langs == lang) & ~np.isnan(values[PERPLEXITY])]
        if scored.size:
            ranked[(PERPLEXITY, lang)] = scored
    charted = {name: np.log10(np.maximum(values[name], 1.0)) if log else values[name]
               for name, log in HISTOGRAMS.items()}
    return Shard(ranked, charted)


@dataclass
class ShardSketch:
    """One shard's sketch: per ranked key its occupied rank bins and their counts (sparse, so what a worker sends
    grows with the shard, not with RANK_BINS: dense, it was 0.5 MB per key and shard), and per chart its finite
    range and missing count."""
    bins: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)


@dataclass
class Sketch:
    """The shards' sketches added up: counts per rank bin, and per chart its finite range and missing count."""
    counts: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, shard: ShardSketch) -> Sketch:
        for key, (bins, counts) in shard.bins.items():
            np.add.at(self.counts.setdefault(key, np.zeros(RANK_BINS, np.int64)), bins, counts)
        for name, (low, high) in shard.ranges.items():
            known = self.ranges.get(name, (low, high))
            self.ranges[name] = (min(known[0], low), max(known[1], high))
        for name, count in shard.missing.items():
            self.missing[name] += count
        return self


def sketch_shard(url: str) -> ShardSketch:
    shard, sketch = _read(url), ShardSketch()
    for key, values in shard.ranked.items():
        sketch.bins[key] = np.unique(_rank_bins(key[0], values), return_counts=True)
    for name, values in shard.charted.items():
        finite = values[~np.isnan(values)]
        if finite.size:
            sketch.ranges[name] = (float(finite.min()), float(finite.max()))
        sketch.missing[name] = int(values.size - finite.size)
    return sketch


def boundary_shard(url: str, wanted: dict[tuple[str, str], list[int]], edges: dict[str, np.ndarray]) -> tuple:
    """This shard's values in the wanted bins, per key and bin, and its chart counts over `edges`."""
    shard = _read(url)
    found = {}
    for key, bins in wanted.items():
        values = shard.ranked.get(key, np.array([]))
        in_bin = _rank_bins(key[0], values)
        found[key] = {index: values[in_bin == index] for index in bins}
    charts = {name: np.histogram(values[~np.isnan(values)], bins=edges[name])[0]
              for name, values in shard.charted.items() if name in edges}
    return found, charts


class OrderStatistics:
    """The k-th smallest values of one ranked key, from its summed bin counts and a second pass over the bins
    that hold them."""

    def __init__(self, counts: np.ndarray):
        self.size = int(counts.sum())
        self.below = np.concatenate([[0], np.cumsum(counts)])      # values in the bins before each bin

    def bin_of(self, rank: int) -> int:
        return int(np.searchsorted(self.below, rank, side="right")) - 1

    def value(self, rank: int, in_bins: dict[int, np.ndarray]) -> float:
        index = self.bin_of(rank)
        return float(np.sort(in_bins[index])[rank - int(self.below[index])])


def summarize_attributes(shard_urls: list[str], config: QualityConfig) -> dict:
    sketch = Sketch()
    for _, part in completed(sketch_shard, shard_urls, CALL_SHARDS):
        sketch.add(part)
    statistics = {key: OrderStatistics(counts) for key, counts in sketch.counts.items()}
    ranks = {key: _wanted_ranks(key, stats.size, config) for key, stats in statistics.items()}
    wanted = {key: sorted({statistics[key].bin_of(rank) for rank in key_ranks}) for key, key_ranks in ranks.items()}
    edges = {name: np.histogram_bin_edges(np.array(limits), bins=BINS) for name, limits in sketch.ranges.items()}
    in_bins: dict = defaultdict(lambda: defaultdict(list))
    charts = {name: np.zeros(BINS, np.int64) for name in edges}
    for _, (found, counts) in completed(partial(boundary_shard, wanted=wanted, edges=edges), shard_urls, CALL_SHARDS):
        for key, by_bin in found.items():
            for index, values in by_bin.items():
                in_bins[key][index].append(values)
        for name, chart in counts.items():
            charts[name] += chart
    values = {key: {rank: statistics[key].value(rank, {index: np.concatenate(parts)
                                                       for index, parts in in_bins[key].items()})
                    for rank in key_ranks} for key, key_ranks in ranks.items()}
    return {"kenlm_bucket_edges": _bucket_edges(statistics, values, config.kenlm.bucket_percentiles),
            "classifier_min_hq_prob": _classifier_threshold(statistics, values, config),
            "histograms": {name: _histogram(charts.get(name), edges.get(name), log, sketch.missing[name])
                           for name, log in HISTOGRAMS.items()}}


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
    size = statistics[(PROBABILITY, "")].size
    if thresholds.keep_top_fraction is not None and size:
        candidates.append(values[(PROBABILITY, "")][_top_rank(size, thresholds.keep_top_fraction)])
    return max(candidates) if candidates else None


def _histogram(counts: np.ndarray | None, edges: np.ndarray | None, log: bool, missing: int) -> dict:
    if counts is None:
        return {"counts": [], "edges": [], "log10": log, "missing": missing}
    return {"counts": counts.tolist(), "edges": [round(float(edge), 5) for edge in edges], "log10": log,
            "missing": missing}
