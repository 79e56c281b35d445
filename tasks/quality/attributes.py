"""Every quality attribute of one document, and the Arrow types of their columns.

A document's attributes depend on its text, its `lang` and the scoring config only (never on its shard).
"""
from __future__ import annotations

import pyarrow as pa

from configs.quality import C4LineRules
from tasks.quality.c4 import c4_attributes, has_bad_words
from tasks.quality.families import FAMILIES
from tasks.quality.fineweb import fineweb_attributes
from tasks.quality.gopher import gopher_quality, gopher_repetition
from tasks.quality.words import split_words

# `word_tokens` (the funnel's token count) and every family's columns, in family order.
ATTRIBUTE_TYPES: dict[str, pa.DataType] = {
    "word_tokens": pa.int64(), **{name: kind for family in FAMILIES for name, kind in family.attributes.items()}}


def heuristic_attributes(text: str, lang: str | None, c4_rules: C4LineRules, bad_words_dir: str) -> dict:
    """Gopher quality and repetition, C4 and FineWeb measurements of one text."""
    words = split_words(text)
    return ({"word_tokens": len(words)} | gopher_quality(text, words, lang) | gopher_repetition(text, words)
            | c4_attributes(text, c4_rules) | {"c4_bad_words": has_bad_words(text, lang, bad_words_dir)}
            | fineweb_attributes(text, words))
