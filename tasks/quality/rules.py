"""The filter's rules: each family reads stored attributes and gives the first rule a document fails (the family
objects in tasks/quality/families.py hold these with their attributes and histograms).

A rule whose attribute is None (not applicable: a language written without spaces, a language without a
stop-word list or bad-word list, a text with no lines) passes. Reason names follow datatrove's where it has one.
"""
from __future__ import annotations

from configs.quality import (C4Thresholds, ClassifierThresholds, FineWebThresholds, GopherQualityThresholds,
                             GopherRepetitionThresholds, KenlmThresholds)
from tasks.quality.classifier import seeded_rank

def _below(value, limit) -> bool:
    return limit is not None and value is not None and value < limit


def _above(value, limit) -> bool:
    return limit is not None and value is not None and value > limit


def gopher_quality_reason(row: dict, t: GopherQualityThresholds) -> str | None:
    checks = [
        ("gopher_short_doc", _below(row["gopher_words"], t.min_doc_words)),
        ("gopher_long_doc", _above(row["gopher_words"], t.max_doc_words)),
        ("gopher_below_avg_word_length", _below(row["gopher_avg_word_length"], t.min_avg_word_length)),
        ("gopher_above_avg_word_length", _above(row["gopher_avg_word_length"], t.max_avg_word_length)),
        ("gopher_too_many_hashes", _above(row["gopher_hash_ratio"], t.max_symbol_word_ratio)),
        ("gopher_too_many_ellipsis", _above(row["gopher_ellipsis_ratio"], t.max_symbol_word_ratio)),
        ("gopher_too_many_bullets", _above(row["gopher_bullet_lines_ratio"], t.max_bullet_lines_ratio)),
        ("gopher_too_many_end_ellipsis", _above(row["gopher_ellipsis_lines_ratio"], t.max_ellipsis_lines_ratio)),
        ("gopher_below_alpha_threshold", _below(row["gopher_alpha_words_ratio"], t.min_alpha_words_ratio)),
        ("gopher_too_few_stop_words", _below(row["gopher_stop_words"], t.min_stop_words)),
    ]
    return next((reason for reason, failed in checks if failed), None)


def gopher_repetition_reason(row: dict, t: GopherRepetitionThresholds) -> str | None:
    checks = [
        ("dup_para_frac", _above(row["rep_dup_para_frac"], t.dup_para_frac)),
        ("dup_para_char_frac", _above(row["rep_dup_para_char_frac"], t.dup_para_char_frac)),
        ("dup_line_frac", _above(row["rep_dup_line_frac"], t.dup_line_frac)),
        ("dup_line_char_frac", _above(row["rep_dup_line_char_frac"], t.dup_line_char_frac)),
        *[(f"top_{n}_gram", _above(row[f"rep_top_{n}gram_char_frac"], limit))
          for n, limit in sorted(t.top_ngram_char_frac.items())],
        *[(f"duplicated_{n}_n_grams", _above(row[f"rep_dup_{n}gram_char_frac"], limit))
          for n, limit in sorted(t.dup_ngram_char_frac.items())],
    ]
    return next((reason for reason, failed in checks if failed), None)


def c4_reason(row: dict, t: C4Thresholds) -> str | None:
    if t.drop_lorem_ipsum and row["c4_lorem_ipsum"]:
        return "lorem_ipsum"
    if t.drop_curly_bracket and row["c4_curly_bracket"]:
        return "curly_bracket"
    if _below(row["c4_sentences"], t.min_sentences):
        return "too_few_sentences"
    # The kept share is chosen by a hash of the id, so every rerun keeps the same pages.
    if t.drop_bad_words and row["c4_bad_words"] and seeded_rank(row["id"], 0) >= t.bad_words_keep_fraction:
        return "bad_words"
    return None


def fineweb_reason(row: dict, t: FineWebThresholds) -> str | None:
    if row["fineweb_line_punct_ratio"] is None:
        return "empty"
    punct = row["fineweb_line_punct_ratio"]
    checks = [
        ("line_punct_ratio", _below(punct, t.min_line_punct_ratio) and not (punct == 0 and t.line_punct_exclude_zero)),
        ("short_line_ratio", _above(row["fineweb_short_line_ratio"], t.max_short_line_ratio)),
        ("char_dup_ratio", _above(row["fineweb_dup_line_char_ratio"], t.max_dup_line_char_ratio)),
        ("list_ratio", _above(row["fineweb_newline_ratio"], t.max_newline_ratio)),
    ]
    return next((reason for reason, failed in checks if failed), None)


def kenlm_reason(row: dict, t: KenlmThresholds, bucket: str | None) -> str | None:
    if row["kenlm_ppl"] is None:
        return "no_perplexity_model" if t.drop_unscored else None
    if bucket is not None and bucket not in t.keep_buckets:
        return f"perplexity_{bucket}"
    return "perplexity_above_max" if _above(row["kenlm_ppl"], t.max_perplexity) else None


def classifier_reason(row: dict, t: ClassifierThresholds, min_prob: float | None) -> str | None:
    if row["hq_prob"] is None:
        return None
    return "classifier_low_hq_prob" if _below(row["hq_prob"], min_prob) else None


def perplexity_bucket(row: dict, edges: dict[str, list[float]]) -> str | None:
    """head / middle / tail by the language's perplexity cut points; None without a perplexity."""
    if row["kenlm_ppl"] is None or row["lang"] not in edges:
        return None
    low, high = edges[row["lang"]]
    return "head" if row["kenlm_ppl"] <= low else "middle" if row["kenlm_ppl"] <= high else "tail"
