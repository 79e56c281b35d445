"""Every quality attribute of one document, and the Arrow types of their columns.

A document's attributes depend on its text, its `lang` and the scoring config only (never on its shard).
"""
from __future__ import annotations

import pyarrow as pa

from configs.quality import C4LineRules
from tasks.quality.c4 import c4_attributes, has_bad_words
from tasks.quality.fineweb import fineweb_attributes
from tasks.quality.gopher import DUPLICATE_NGRAMS, TOP_NGRAMS, gopher_quality, gopher_repetition
from tasks.quality.words import split_words

_FLOAT, _INT, _BOOL = pa.float64(), pa.int64(), pa.bool_()
ATTRIBUTE_TYPES: dict[str, pa.DataType] = {
    "word_tokens": _INT,
    "gopher_words": _INT, "gopher_avg_word_length": _FLOAT, "gopher_hash_ratio": _FLOAT,
    "gopher_ellipsis_ratio": _FLOAT, "gopher_bullet_lines_ratio": _FLOAT, "gopher_ellipsis_lines_ratio": _FLOAT,
    "gopher_alpha_words_ratio": _FLOAT, "gopher_stop_words": _INT,
    "rep_dup_para_frac": _FLOAT, "rep_dup_para_char_frac": _FLOAT, "rep_dup_line_frac": _FLOAT,
    "rep_dup_line_char_frac": _FLOAT,
    **{f"rep_top_{n}gram_char_frac": _FLOAT for n in TOP_NGRAMS},
    **{f"rep_dup_{n}gram_char_frac": _FLOAT for n in DUPLICATE_NGRAMS},
    "c4_sentences": _INT, "c4_lorem_ipsum": _BOOL, "c4_curly_bracket": _BOOL, "c4_bad_words": _BOOL,
    "fineweb_line_punct_ratio": _FLOAT, "fineweb_short_line_ratio": _FLOAT, "fineweb_dup_line_char_ratio": _FLOAT,
    "fineweb_newline_ratio": _FLOAT,
    "kenlm_ppl": _FLOAT, "hq_prob": _FLOAT,
}


def heuristic_attributes(text: str, lang: str | None, c4_rules: C4LineRules, bad_words_dir: str) -> dict:
    """Gopher quality and repetition, C4 and FineWeb measurements of one text."""
    words = split_words(text)
    return ({"word_tokens": len(words)} | gopher_quality(text, words, lang) | gopher_repetition(text, words)
            | c4_attributes(text, c4_rules) | {"c4_bad_words": has_bad_words(text, lang, bad_words_dir)}
            | fineweb_attributes(text, words))
