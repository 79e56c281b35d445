"""The quality filter families, one object each: the attribute columns the family's measurements fill (scored
once, by the `quality_scores` stage), its rule (the first check a document fails, applied by `quality_filter`
as often as thresholds change) and the histograms of its attributes with its thresholds marked. Scoring, the
corpus summary, the charts and the filter all read this one list; adding a family is adding an entry."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from configs.quality import QualityFilterConfig
from tasks.quality.gopher import DUPLICATE_NGRAMS, TOP_NGRAMS
from tasks.quality.rules import (c4_reason, classifier_reason, fineweb_reason, gopher_quality_reason,
                                 gopher_repetition_reason, kenlm_reason, perplexity_bucket)

_FLOAT, _INT, _BOOL = pa.float64(), pa.int64(), pa.bool_()
# Chart domains (on the chart's scale), split into fixed bins by the quality summary. Widths of a power of two, or
# 12 (1 to 1e12 on a log10 scale), keep the bins' edges exact binary fractions.
RATIO, DECADES, UP_TO_64 = (0.0, 1.0), (0.0, 12.0), (0.0, 64.0)   # ratios; 1 to 1e12 (log10); lengths, counts


@dataclass(frozen=True)
class Histogram:
    attribute: str
    log10: bool                                           # bin on a log scale (counts spanning decades)
    marks: Callable[[object, dict], list[float | None]]   # (the family's thresholds, cutoffs) -> lines to draw
    domain: tuple[float, float] = RATIO                   # the values charted; beyond it, in the end bins


@dataclass(frozen=True)
class QualityFamily:
    name: str                                   # its section of `quality.filter` and its drop-reason prefix
    attributes: dict[str, pa.DataType]          # the columns its measurements fill, with their Arrow types
    rule: Callable[[dict, object, dict], str | None]   # (row, its thresholds, cutoffs) -> reason or None
    histograms: tuple[Histogram, ...] = ()


FAMILIES: tuple[QualityFamily, ...] = (
    QualityFamily(
        "gopher_quality",
        {"gopher_words": _INT, "gopher_avg_word_length": _FLOAT, "gopher_hash_ratio": _FLOAT,
         "gopher_ellipsis_ratio": _FLOAT, "gopher_bullet_lines_ratio": _FLOAT, "gopher_ellipsis_lines_ratio": _FLOAT,
         "gopher_alpha_words_ratio": _FLOAT, "gopher_stop_words": _INT},
        lambda row, t, cutoffs: gopher_quality_reason(row, t),
        (Histogram("gopher_words", True, lambda t, c: [t.min_doc_words, t.max_doc_words], DECADES),
         Histogram("gopher_avg_word_length", False, lambda t, c: [t.min_avg_word_length, t.max_avg_word_length],
                   UP_TO_64),
         Histogram("gopher_alpha_words_ratio", False, lambda t, c: [t.min_alpha_words_ratio]),
         Histogram("gopher_stop_words", False, lambda t, c: [t.min_stop_words], UP_TO_64))),
    QualityFamily(
        "gopher_repetition",
        {"rep_dup_para_frac": _FLOAT, "rep_dup_para_char_frac": _FLOAT, "rep_dup_line_frac": _FLOAT,
         "rep_dup_line_char_frac": _FLOAT, **{f"rep_top_{n}gram_char_frac": _FLOAT for n in TOP_NGRAMS},
         **{f"rep_dup_{n}gram_char_frac": _FLOAT for n in DUPLICATE_NGRAMS}},
        lambda row, t, cutoffs: gopher_repetition_reason(row, t),
        (Histogram("rep_dup_line_frac", False, lambda t, c: [t.dup_line_frac]),
         Histogram("rep_top_2gram_char_frac", False, lambda t, c: [t.top_ngram_char_frac.get(2)]),
         Histogram("rep_dup_5gram_char_frac", False, lambda t, c: [t.dup_ngram_char_frac.get(5)]))),
    QualityFamily(
        "c4",
        {"c4_sentences": _INT, "c4_lorem_ipsum": _BOOL, "c4_curly_bracket": _BOOL, "c4_bad_words": _BOOL},
        lambda row, t, cutoffs: c4_reason(row, t),
        (Histogram("c4_sentences", True, lambda t, c: [t.min_sentences], DECADES),)),
    QualityFamily(
        "fineweb",
        {"fineweb_line_punct_ratio": _FLOAT, "fineweb_short_line_ratio": _FLOAT,
         "fineweb_dup_line_char_ratio": _FLOAT, "fineweb_newline_ratio": _FLOAT},
        lambda row, t, cutoffs: fineweb_reason(row, t),
        (Histogram("fineweb_line_punct_ratio", False, lambda t, c: [t.min_line_punct_ratio]),
         Histogram("fineweb_short_line_ratio", False, lambda t, c: [t.max_short_line_ratio]),
         Histogram("fineweb_dup_line_char_ratio", False, lambda t, c: [t.max_dup_line_char_ratio]))),
    QualityFamily(
        "kenlm",
        {"kenlm_ppl": _FLOAT},
        lambda row, t, cutoffs: kenlm_reason(row, t, perplexity_bucket(row, cutoffs.get("kenlm_bucket_edges", {}))),
        (Histogram("kenlm_ppl", True, lambda t, c: [edge for edges in c.get("kenlm_bucket_edges", {}).values()
                                                    for edge in edges], DECADES),)),
    QualityFamily(
        "classifier",
        {"hq_prob": _FLOAT},
        lambda row, t, cutoffs: classifier_reason(row, t, cutoffs.get("classifier_min_hq_prob")),
        (Histogram("hq_prob", False, lambda t, c: [c.get("classifier_min_hq_prob")]),)),
)


def family_checks(config: QualityFilterConfig, cutoffs: dict) -> list[tuple[str, Callable[[dict], str | None]]]:
    """(family, row -> reason) for each enabled family, in funnel order. `cutoffs` holds the corpus-level
    numbers: perplexity bucket edges per language and the classifier's probability threshold."""
    def check(family: QualityFamily) -> Callable[[dict], str | None]:
        thresholds = getattr(config, family.name)
        return lambda row: family.rule(row, thresholds, cutoffs)

    return [(family.name, check(family)) for family in FAMILIES if getattr(config, family.name).enabled]


def histogram_scales() -> dict[str, bool]:
    """Every histogrammed attribute, in family order, and whether it is binned on a log10 scale."""
    return {histogram.attribute: histogram.log10 for family in FAMILIES for histogram in family.histograms}


def histogram_domains() -> dict[str, tuple[float, float]]:
    """Every histogrammed attribute's chart domain."""
    return {histogram.attribute: histogram.domain for family in FAMILIES for histogram in family.histograms}


def thresholds_by_attribute(config: QualityFilterConfig, cutoffs: dict) -> dict[str, list[float]]:
    """Threshold values drawn on each histogram (only those that apply)."""
    return {histogram.attribute: [value for value in histogram.marks(getattr(config, family.name), cutoffs)
                                  if value is not None]
            for family in FAMILIES for histogram in family.histograms}
