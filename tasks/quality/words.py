"""How the heuristics see text: words, lines, paragraphs and sentence ends.

Words follow spaCy's English tokenizer closely enough for the published thresholds (datatrove splits words
with spaCy): punctuation marks are words of their own, ellipses stay whole, numbers and abbreviations with
inner dots or commas stay whole, contractions split before the apostrophe. One regex, no model.
"""
from __future__ import annotations

import sys
from functools import lru_cache

import regex

from configs.dedup import CHARACTER_SHINGLE_LANGUAGES

_URL = regex.compile(r"^(?:[a-z][a-z0-9+.-]*://|www\.)\S+$", regex.IGNORECASE)
_ABBREVIATION = regex.compile(r"^(?:\p{L}\.){2,}$|^(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|vs|etc|Inc|Ltd|Co|No|Mt|Jan|Feb|"
                              r"Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|\p{Lu})\.$")
# Inside a chunk: hyphens and dashes, or : / , between letters, split; between digits they do not (12:30, 2020-07).
_INFIX = regex.compile(r"(?<=\p{L})(-{1,3}|[–—~])(?=\p{L})|(?<=[\p{L}\p{N}])([:/<>=])(?=\p{L})|(?<=\p{L})(,)(?=\p{L})"
                       r"|(\.{3,}|…)")
_CONTRACTION = regex.compile(r"(?i)^(.+?)(n['’]t|['’](?:s|m|d|ll|re|ve))$")
_SENTENCE_END = regex.compile(r"[\p{Sentence_Terminal}]+[\"'”’)\]]*(?=\s|$)")
_PARAGRAPH_BREAK = regex.compile(r"\n{2,}")
_LINE_BREAKS = regex.compile(r"\n+")

# Languages written without spaces between words: word-based rules do not apply to them.
UNSPACED_LANGUAGES = frozenset(CHARACTER_SHINGLE_LANGUAGES)


def split_words(text: str) -> list[str]:
    words: list[str] = []
    for chunk in text.split():
        if chunk.isalnum() or not any(char.isalnum() for char in chunk):   # a plain word, or marks only ("--")
            words.append(chunk)
        else:
            _split_chunk(chunk, words)
    return words


def _split_chunk(chunk: str, words: list[str]) -> None:
    """spaCy's order: leading marks, then trailing marks (abbreviations and URLs keep theirs), then infixes."""
    suffixes: list[str] = []
    while chunk and not chunk[0].isalnum() and not _URL.match(chunk):
        mark = "..." if chunk.startswith("...") else chunk[0]
        words.append(mark)
        chunk = chunk[len(mark):]
    while chunk and not chunk[-1].isalnum() and not _ABBREVIATION.match(chunk):
        mark = "..." if chunk.endswith("...") else chunk[-1]
        suffixes.append(mark)
        chunk = chunk[:-len(mark)]
    if chunk:
        if _URL.match(chunk):
            words.append(chunk)
        else:
            for part in _INFIX.split(chunk):
                if part:
                    contraction = _CONTRACTION.match(part)
                    words.extend(contraction.groups() if contraction else (part,))
    words.extend(reversed(suffixes))


def split_paragraphs(text: str) -> list[str]:
    return _PARAGRAPH_BREAK.split(text.strip())


def split_lines(text: str) -> list[str]:
    return _LINE_BREAKS.split(text)


def count_sentences(line: str) -> int:
    """Sentences in one line: runs of sentence-final punctuation followed by space or the end, at least 1."""
    return max(1, len(_SENTENCE_END.findall(line)))


@lru_cache(maxsize=1)
def sentence_terminals() -> tuple[str, ...]:
    """Every Unicode Sentence_Terminal character (., !, ?, 。, ।, ؟, ...), for 'line ends in punctuation'."""
    terminal = regex.compile(r"\p{Sentence_Terminal}")
    return tuple(chr(code) for code in range(sys.maxunicode + 1) if terminal.match(chr(code)))


def punctuation_only(word: str) -> bool:
    """A word made only of punctuation or symbols (no letter, digit or other character)."""
    return all(not char.isalnum() and not char.isspace() and char != "_" for char in word)
