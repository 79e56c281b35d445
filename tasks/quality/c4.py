"""C4 attributes (Raffel et al. 2020, section 2.2; the rules of TensorFlow Datasets' c4_utils).

Lines pass C4's line rules (terminal punctuation, at least 3 words, no 1000-character word, no "javascript",
no cookie / terms-of-use phrase); `c4_sentences` counts the sentences in the lines that pass. Lorem ipsum and
curly brackets, seen in a passing line, mark the whole page. Bad words use the LDNOOBW list of the
document's language. The text itself is not rewritten: the stage keeps or drops whole documents.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

from configs.quality import C4LineRules
from tasks.quality.words import UNSPACED_LANGUAGES, count_sentences

_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
# C4's own marks, plus the full stops of scripts that do not use "." (the added ones never end an English line).
_END_PUNCTUATION = (".", "?", "!", '"', "'", "。", "！", "？", "।", "؟")
_POLICY_PHRASES = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies",
                   "use cookies")
# Common parts of ordinary words in languages without spaces (as C4 allows them).
_ALLOWED_SUBSTRINGS = {"ja": {"sm", "グロ", "女の子"}, "zh": {"性"}}


def c4_attributes(text: str, rules: C4LineRules) -> dict:
    lines = text.splitlines()
    sentences = 0
    lorem_ipsum = curly_bracket = False
    for line in lines:
        line = line.strip()
        words = line.split()
        if max(map(len, words), default=0) > rules.max_word_length:
            continue
        if rules.remove_citations:
            line = _CITATION.sub("", line)
        if rules.filter_no_terminal_punct and (not line.endswith(_END_PUNCTUATION) or line.endswith("...")):
            continue
        if len(words) < rules.min_words_per_line:
            continue
        lowered = line.lower()
        lorem_ipsum = lorem_ipsum or "lorem ipsum" in lowered
        curly_bracket = curly_bracket or "{" in line
        if rules.filter_javascript and "javascript" in lowered:
            continue
        if rules.filter_policy and any(phrase in lowered for phrase in _POLICY_PHRASES):
            continue
        sentences += count_sentences(line)
    return {"c4_sentences": sentences, "c4_lorem_ipsum": lorem_ipsum, "c4_curly_bracket": curly_bracket}


def has_bad_words(text: str, lang: str | None, lists_dir: str) -> bool | None:
    """Whether the text holds a word of its language's list; None when there is no list for the language."""
    pattern = _bad_words_pattern((lang or "").split("_")[0], lists_dir)
    return None if pattern is None else pattern.search(text.lower()) is not None


@lru_cache(maxsize=64)
def _bad_words_pattern(lang: str, lists_dir: str) -> re.Pattern | None:
    path = os.path.join(lists_dir, lang)
    if not lang or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        words = {line.strip() for line in handle if line.strip()}
    words -= set().union(*_ALLOWED_SUBSTRINGS.values())
    alternatives = "|".join(re.escape(word) for word in sorted(words))
    if lang in UNSPACED_LANGUAGES:
        return re.compile(alternatives)
    return re.compile(rf"(?:\W|^)(?:{alternatives})(?:\W|$)")
