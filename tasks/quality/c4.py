"""C4 attributes (Raffel et al. 2020, section 2.2; the rules of TensorFlow Datasets' c4_utils).

Lines pass C4's line rules (terminal punctuation, at least 3 words, no 1000-character word, no "javascript",
no cookie / terms-of-use phrase); `c4_sentences` counts the sentences in the lines that pass. Lorem ipsum and
curly brackets, seen in a passing line, mark the whole page. Bad words use the LDNOOBW list of the
document's language. The text itself is not rewritten: the stage keeps or drops whole documents.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
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
    words = _bad_words((lang or "").split("_")[0], lists_dir)
    return None if words is None else words.found_in(text.lower())


@dataclass(frozen=True)
class BadWords:
    """A language's list as C4 matches it: an entry between non-word characters (or the text's ends), or anywhere
    in a language written without spaces. One regex of the ~400 alternatives took 0.40 ms a document of the bench
    corpus, a sixth of the scores stage; for a spaced language the same answer comes from the text's maximal runs
    of word characters in 0.25 ms: an entry of word characters only is found exactly when it is one of them, and
    an entry with other characters (a phrase: "ball gag") only when its leading run is one of them too, so the
    phrases' regex runs only then."""
    single: frozenset[str]                  # entries of word characters only
    leads: frozenset[str] | None            # the other entries' leading runs (None: one has none, always search)
    phrases: re.Pattern | None              # the other entries; for a language without spaces, every entry

    def found_in(self, lowered: str) -> bool:
        if not self.single:
            return self.phrases is not None and self.phrases.search(lowered) is not None
        runs = set(_WORD_RUN.findall(lowered))
        return not runs.isdisjoint(self.single) or (
            self.phrases is not None and (self.leads is None or not runs.isdisjoint(self.leads))
            and self.phrases.search(lowered) is not None)


_WORD_RUN = re.compile(r"\w+")


@lru_cache(maxsize=64)
def _bad_words(lang: str, lists_dir: str) -> BadWords | None:
    path = os.path.join(lists_dir, lang)
    if not lang or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        words = {line.strip() for line in handle if line.strip()}
    words -= set().union(*_ALLOWED_SUBSTRINGS.values())
    if lang in UNSPACED_LANGUAGES:
        return BadWords(frozenset(), None, _alternatives(words))
    single = frozenset(word for word in words if _WORD_RUN.fullmatch(word))
    phrases = words - single
    leads = [_WORD_RUN.match(word) for word in phrases]
    return BadWords(single, None if None in leads else frozenset(lead[0] for lead in leads),
                    re.compile(rf"(?:\W|^)(?:{_alternatives(phrases).pattern})(?:\W|$)") if phrases else None)


def _alternatives(words: set[str]) -> re.Pattern:
    return re.compile("|".join(re.escape(word) for word in sorted(words)))
