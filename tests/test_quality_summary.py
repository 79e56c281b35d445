"""The quality filter's corpus-wide cutoffs from per-shard sketches: the same numbers as sorting the whole corpus
(perplexity percentiles per language, the keep-top-k probability, the attribute charts), whatever the shards."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from configs.quality import QualityConfig
from storage.parquet import write_table
from tasks.quality.summary import BINS, HISTOGRAMS, summarize_attributes


def corpus(count: int, rng: np.random.Generator) -> dict[str, list]:
    """Documents in three languages with log-normal perplexities (ties and a crowd near one value included),
    classifier probabilities piled up near 1, and every charted attribute; some values missing."""
    perplexity = np.exp(rng.normal(6.0, 1.5, count))
    perplexity[: count // 10] = 812.25                       # many equal values in one bin
    probability = 1 / (1 + np.exp(-rng.normal(4.0, 5.0, count)))
    probability[rng.random(count) < 0.05] = 1.0000100136     # fastText's probability can exceed 1
    rows = dict(id=[f"d{i}" for i in range(count)], lang=rng.choice(["en", "de", "fr", None], count).tolist(),
                kenlm_ppl=[None if i % 17 == 0 else float(v) for i, v in enumerate(perplexity)],
                hq_prob=[None if i % 13 == 0 else float(v) for i, v in enumerate(probability)])
    for name, log in HISTOGRAMS.items():
        if name not in ("kenlm_ppl", "hq_prob"):
            values = rng.lognormal(3.0, 2.0, count) if log else rng.random(count)
            rows[name] = [None if i % 11 == 0 else float(v) for i, v in enumerate(values)]
    return rows


def whole_corpus(rows: dict[str, list], config: QualityConfig) -> dict:
    """What one sort of the whole corpus gives."""
    def floats(name):
        return np.array([np.nan if value is None else value for value in rows[name]], dtype=float)

    langs, perplexity, probability = np.array(rows["lang"], dtype=object), floats("kenlm_ppl"), floats("hq_prob")
    edges = {lang: [round(float(value), 3) for value in np.percentile(
        perplexity[(langs == lang) & ~np.isnan(perplexity)], list(config.kenlm.bucket_percentiles))]
        for lang in sorted({lang for lang in rows["lang"] if lang})}
    scored = np.sort(probability[~np.isnan(probability)])[::-1]
    top = float(scored[max(1, int(round(config.filter.classifier.keep_top_fraction * len(scored)))) - 1])
    charts = {}
    for name, log in HISTOGRAMS.items():
        values = floats(name)
        finite = values[~np.isnan(values)]
        finite = np.log10(np.maximum(finite, 1.0)) if log else finite
        counts, chart_edges = np.histogram(finite, bins=BINS)
        charts[name] = {"counts": counts.tolist(), "edges": [round(float(e), 5) for e in chart_edges], "log10": log,
                        "missing": int(len(values) - len(finite))}
    return {"kenlm_bucket_edges": edges, "classifier_min_hq_prob": top, "histograms": charts}


def write_shards(rows: dict[str, list], order: np.ndarray, parts: int, folder) -> list[str]:
    urls = []
    for part, chunk in enumerate(np.array_split(order, parts)):
        url = str(folder / f"shard-{part}.parquet")
        write_table(pa.table({name: [column[i] for i in chunk] for name, column in rows.items()}), url)
        urls.append(url)
    return urls


@pytest.mark.parametrize("fraction", [0.1, 0.5, 1.0])
def test_sketched_cutoffs_equal_the_whole_corpus_sort_for_any_sharding(tmp_path, fraction):
    rng = np.random.default_rng(7)
    rows = corpus(3000, rng)
    config = QualityConfig.model_validate({"filter": {"classifier": {"keep_top_fraction": fraction}}})
    expected = whole_corpus(rows, config)
    (tmp_path / "one").mkdir()
    (tmp_path / "seven").mkdir()
    one = summarize_attributes(write_shards(rows, np.arange(3000), 1, tmp_path / "one"), config)
    seven = summarize_attributes(write_shards(rows, rng.permutation(3000), 7, tmp_path / "seven"), config)
    assert one == seven == expected
