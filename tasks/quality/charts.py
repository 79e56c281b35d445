"""PNG histograms of the quality attributes with the filter's thresholds marked."""
from __future__ import annotations

import math
import os

from configs.quality import QualityFilterConfig
from tasks.charts import default_style, new_figure, save_png


def thresholds_by_attribute(config: QualityFilterConfig, cutoffs: dict) -> dict[str, list[float]]:
    """Threshold values drawn on each histogram (only those that apply)."""
    gopher, repetition, c4, fineweb = config.gopher_quality, config.gopher_repetition, config.c4, config.fineweb
    marks = {
        "gopher_words": [gopher.min_doc_words, gopher.max_doc_words],
        "gopher_avg_word_length": [gopher.min_avg_word_length, gopher.max_avg_word_length],
        "gopher_alpha_words_ratio": [gopher.min_alpha_words_ratio],
        "gopher_stop_words": [gopher.min_stop_words],
        "rep_dup_line_frac": [repetition.dup_line_frac],
        "rep_top_2gram_char_frac": [repetition.top_ngram_char_frac.get(2)],
        "rep_dup_5gram_char_frac": [repetition.dup_ngram_char_frac.get(5)],
        "c4_sentences": [c4.min_sentences],
        "fineweb_line_punct_ratio": [fineweb.min_line_punct_ratio],
        "fineweb_short_line_ratio": [fineweb.max_short_line_ratio],
        "fineweb_dup_line_char_ratio": [fineweb.max_dup_line_char_ratio],
        "kenlm_ppl": [edge for edges in cutoffs.get("kenlm_bucket_edges", {}).values() for edge in edges],
        "hq_prob": [cutoffs.get("classifier_min_hq_prob")],
    }
    return {name: [value for value in values if value is not None] for name, values in marks.items()}


def histograms_png(histograms: dict[str, dict], marks: dict[str, list[float]], path: str) -> str:
    names = [name for name, histogram in histograms.items() if histogram["counts"]]
    columns = 3
    rows = max(1, math.ceil(len(names) / columns))
    with default_style():
        fig = new_figure((12, 2.6 * rows))
        for position, name in enumerate(names, start=1):
            histogram = histograms[name]
            axes = fig.add_subplot(rows, columns, position)
            edges = histogram["edges"]
            axes.stairs(histogram["counts"], edges, fill=True, alpha=0.6)
            for value in marks.get(name, []):
                x = math.log10(max(value, 1.0)) if histogram["log10"] else value
                axes.axvline(x, color="tab:red", linestyle="--", linewidth=1.2)
            axes.set_title(f"{name}{' (log10)' if histogram['log10'] else ''}", fontsize=9)
            axes.tick_params(labelsize=7)
        return save_png(fig, os.fspath(path))
