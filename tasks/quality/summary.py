"""The corpus-level pass before filtering: perplexity bucket edges per language, the classifier's threshold for
keep-top-k%, and histograms of the attributes the thresholds read. It reads attribute columns only."""
from __future__ import annotations

import numpy as np

from configs.quality import QualityConfig
from storage.document_shard import read_documents
from tasks.quality.families import histogram_scales

HISTOGRAMS = histogram_scales()      # attribute -> binned on a log10 scale
BINS = 40


def summarize_attributes(shard_urls: list[str], config: QualityConfig) -> dict:
    columns = ["lang", "kenlm_ppl", *HISTOGRAMS]
    tables = [read_documents(url, columns=list(dict.fromkeys(columns))) for url in shard_urls]
    values = {name: np.concatenate([_floats(table, name) for table in tables]) if tables else np.array([])
              for name in dict.fromkeys(columns) if name != "lang"}
    langs = np.concatenate([np.array(table.column("lang").to_pylist(), dtype=object) for table in tables]) \
        if tables else np.array([], dtype=object)
    return {"kenlm_bucket_edges": _bucket_edges(values["kenlm_ppl"], langs, config.kenlm.bucket_percentiles),
            "classifier_min_hq_prob": _classifier_threshold(values["hq_prob"], config),
            "histograms": {name: _histogram(values[name], log) for name, log in HISTOGRAMS.items()}}


def _floats(table, name: str) -> np.ndarray:
    return np.array([np.nan if value is None else float(value) for value in table.column(name).to_pylist()])


def _bucket_edges(perplexity: np.ndarray, langs: np.ndarray, percentiles) -> dict[str, list[float]]:
    edges = {}
    for lang in sorted({lang for lang in langs.tolist() if lang}):
        scored = perplexity[(langs == lang) & ~np.isnan(perplexity)]
        if len(scored):
            edges[lang] = [round(float(value), 3) for value in np.percentile(scored, list(percentiles))]
    return edges


def _classifier_threshold(probabilities: np.ndarray, config: QualityConfig) -> float | None:
    """The stricter of `min_hq_prob` and the probability that keeps the top fraction of scored documents."""
    thresholds = config.filter.classifier
    scored = probabilities[~np.isnan(probabilities)]
    candidates = [thresholds.min_hq_prob] if thresholds.min_hq_prob is not None else []
    if thresholds.keep_top_fraction is not None and len(scored):
        # The k-th highest probability: ties at the boundary are all kept.
        k = max(1, int(round(thresholds.keep_top_fraction * len(scored))))
        candidates.append(float(np.sort(scored)[::-1][k - 1]))
    return max(candidates) if candidates else None


def _histogram(values: np.ndarray, log: bool) -> dict:
    finite = values[~np.isnan(values)]
    if log:
        finite = np.log10(np.maximum(finite, 1.0))
    if not len(finite):
        return {"counts": [], "edges": [], "log10": log, "missing": int(len(values))}
    counts, edges = np.histogram(finite, bins=BINS)
    return {"counts": counts.tolist(), "edges": [round(float(edge), 5) for edge in edges], "log10": log,
            "missing": int(len(values) - len(finite))}
