"""The quality filter's corpus-wide cutoffs from per-shard sketches: the same numbers as sorting the whole corpus
(perplexity percentiles per language, the keep-top-k probability), and charts that are np.histogram's over their
edges, whatever the shards; the shards themselves are read again only for a crowded bin's values."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from configs.quality import QualityConfig
from storage.document_shard import read_documents
from storage.parquet import write_table
from tasks.quality.summary import (BINS, CHART_BINS, DOMAINS, HISTOGRAMS, PERPLEXITY, OrderStatistics, Sketch,
                                   shard_sketch, summarize_attributes)


def corpus(count: int, rng: np.random.Generator, crowd: bool = True) -> dict[str, list]:
    """Documents in three languages with log-normal perplexities (with `crowd`, ties and a crowd near one value),
    classifier probabilities piled up near 1, and every charted attribute (some beyond their chart's domain); some
    values missing."""
    perplexity = np.exp(rng.normal(6.0, 1.5, count))
    probability = 1 / (1 + np.exp(-rng.normal(4.0, 5.0, count)))
    if crowd:
        perplexity[: count // 10] = 812.25                       # many equal values in one bin
        probability[rng.random(count) < 0.05] = 1.0000100136     # fastText's probability can exceed 1
    rows = dict(id=[f"d{i}" for i in range(count)], lang=rng.choice(["en", "de", "fr", None], count).tolist(),
                kenlm_ppl=[None if i % 17 == 0 else float(v) for i, v in enumerate(perplexity)],
                hq_prob=[None if i % 13 == 0 else float(v) for i, v in enumerate(probability)])
    for name, log in HISTOGRAMS.items():
        if name not in ("kenlm_ppl", "hq_prob"):
            values = rng.lognormal(3.0, 2.0, count) if log else rng.random(count) * 1.02   # a few ratios > 1
            rows[name] = [None if i % 11 == 0 else float(v) for i, v in enumerate(values)]
    return rows


def floats(rows: dict[str, list], name: str) -> np.ndarray:
    return np.array([np.nan if value is None else value for value in rows[name]], dtype=float)


def whole_corpus_cutoffs(rows: dict[str, list], config: QualityConfig) -> dict:
    """What one sort of the whole corpus gives."""
    langs, perplexity, probability = np.array(rows["lang"], dtype=object), floats(rows, "kenlm_ppl"), \
        floats(rows, "hq_prob")
    edges = {lang: [round(float(value), 3) for value in np.percentile(
        perplexity[(langs == lang) & ~np.isnan(perplexity)], list(config.kenlm.bucket_percentiles))]
        for lang in sorted({lang for lang in rows["lang"] if lang})}
    scored = np.sort(probability[~np.isnan(probability)])[::-1]
    top = float(scored[max(1, int(round(config.filter.classifier.keep_top_fraction * len(scored)))) - 1])
    return {"kenlm_bucket_edges": edges, "classifier_min_hq_prob": top}


def assert_charts_are_histograms_of_the_corpus(rows: dict[str, list], charts: dict[str, dict]) -> None:
    for name, log in HISTOGRAMS.items():
        values = floats(rows, name)
        finite = values[~np.isnan(values)]
        low, high = DOMAINS[name]
        shown = np.clip(np.log10(np.maximum(finite, 1.0)) if log else finite, low, high)
        chart = charts[name]
        edges = np.array(chart["edges"])
        grid = (edges - low) / ((high - low) / CHART_BINS)
        assert np.array_equal(grid, np.round(grid)), name                       # on the fixed grid
        assert 1 <= len(chart["counts"]) <= BINS and len(edges) == len(chart["counts"]) + 1
        assert edges[0] <= shown.min() and shown.max() <= edges[-1]
        assert chart["counts"] == np.histogram(shown, bins=edges)[0].tolist(), name
        assert chart["counts"][0] and chart["counts"][-1]                       # no empty bars at either end
        assert chart["missing"] == len(values) - len(finite) and chart["log10"] == log


def write_shards(rows: dict[str, list], order: np.ndarray, parts: int, folder) -> list[str]:
    folder.mkdir()
    urls = []
    for part, chunk in enumerate(np.array_split(order, parts)):
        url = str(folder / f"shard-{part}.parquet")
        write_table(pa.table({name: [column[i] for i in chunk] for name, column in rows.items()}), url)
        urls.append(url)
    return urls


def sketch_of(urls: list[str]) -> Sketch:
    """The shards' sketches added up, as the scores stage does (here from the written shards)."""
    sketch = Sketch()
    for url in urls:
        sketch.add(shard_sketch(read_documents(url)))
    return sketch


@pytest.mark.parametrize("fraction", [0.1, 0.5, 1.0])
def test_sketched_cutoffs_equal_the_whole_corpus_sort_for_any_sharding(tmp_path, fraction):
    rng = np.random.default_rng(7)
    rows = corpus(3000, rng)
    config = QualityConfig.model_validate({"filter": {"classifier": {"keep_top_fraction": fraction}}})
    one_urls = write_shards(rows, np.arange(3000), 1, tmp_path / "one")
    seven_urls = write_shards(rows, rng.permutation(3000), 7, tmp_path / "seven")
    sketch = sketch_of(seven_urls)
    sketch.save(str(tmp_path / "sketch.npz"))
    one = summarize_attributes(sketch_of(one_urls), one_urls, config)
    seven = summarize_attributes(Sketch.load(str(tmp_path / "sketch.npz")), seven_urls, config)
    assert one == seven
    assert {key: seven[key] for key in ("kenlm_bucket_edges", "classifier_min_hq_prob")} == \
        whole_corpus_cutoffs(rows, config)
    assert_charts_are_histograms_of_the_corpus(rows, seven["histograms"])
    # the crowd at 812.25 holds a wanted percentile of some language, so its bin's values were read again
    statistics = {key: OrderStatistics(bins) for key, bins in sketch.ranked.items() if key[0] == PERPLEXITY}
    assert any(stats.crowded(rank) is not None for stats in statistics.values()
               for p in config.kenlm.bucket_percentiles for rank in (int(p / 100 * (stats.size - 1)),))


def test_no_shard_is_read_when_the_sketch_knows_every_wanted_value(tmp_path):
    """Spread-out values: every wanted order statistic is the smallest or largest of its bin, so the cut points
    come from the sketch alone (the shards passed are not there to be read)."""
    rows = corpus(600, np.random.default_rng(3), crowd=False)
    config = QualityConfig.model_validate({"filter": {"classifier": {"keep_top_fraction": 0.3}}})
    sketch = sketch_of(write_shards(rows, np.arange(600), 3, tmp_path / "shards"))
    cutoffs = summarize_attributes(sketch, [str(tmp_path / "gone.parquet")], config)
    assert {key: cutoffs[key] for key in ("kenlm_bucket_edges", "classifier_min_hq_prob")} == \
        whole_corpus_cutoffs(rows, config)
