"""How the heuristics see text: words, lines, paragraphs and sentence ends.

Words follow spaCy's English tokenizer closely enough for the published thresholds (datatrove splits words
with spaCy): punctuation marks are words of their own, ellipses stay whole, numbers and abbreviations with
inner dots or commas stay whole, contractions split before the apostrophe. One regex, no model.
"""
from __future__ import annotations

import regex

from configs.dedup import CHARACTER_SHINGLE_LANGUAGES

_URL = regex.compile(r"^(?:[a-z][a-z0-9+.-]*://|www\.)\S+$", regex.IGNORECASE)
_ABBREVIATION = regex.compile(r"^(?:\p{L}\.){2,}$|^(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|vs|etc|Inc|Ltd|Co|Mt|Jan|Feb|"
                              r"Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|\p{Lu})\.$")
# Marks that stay one word when they stand alone (dashes, ellipses, emoticons); other runs of marks split.
_WHOLE_MARKS = frozenset({"--", "---", "...", "....", "…", ":)", ":(", "):", ":-)", ";)", ":D", "<3", "=)", ":/"})
_MULTI_MARK = regex.compile(r"\.{2,}|-{2,}|.")
# Trailing marks that are not split off a word (spaCy keeps "word--", "Google+", "breech-").
_KEPT_SUFFIXES = frozenset("-—–*+_/")
# Contractions written without an apostrophe that spaCy still splits.
_BARE_CONTRACTIONS = {"cannot": 3, "im": 1, "hed": 2, "ive": 1, "dont": 2, "didnt": 3, "doesnt": 4, "isnt": 2,
                      "wasnt": 3, "wont": 2, "cant": 2, "youre": 3, "thats": 4}
# Inside a chunk: hyphens and dashes, or : / , between letters, split; between digits they do not (12:30, 2020-07).
_INFIX = regex.compile(r"(?<=[\p{L}\p{N}])(-{1,3}|[–—~])(?=\p{L})|(?<=[\p{L}\p{N}])([:/<>=])(?=\p{L})|(?<=\p{L})(,)(?=\p{L})"
                       r"|(\.{3,}|…)")
_CONTRACTION = regex.compile(r"(?i)^(.+?)(n['’]t|['’](?:s|m|d|ll|re|ve))$")
_SENTENCE_END = regex.compile(r"[\p{Sentence_Terminal}]+[\"'”’)\]]*$")
_PARAGRAPH_BREAK = regex.compile(r"\n{2,}")
_LINE_BREAKS = regex.compile(r"\n+")

# Languages written without spaces between words: word-based rules do not apply to them.
UNSPACED_LANGUAGES = frozenset(CHARACTER_SHINGLE_LANGUAGES)


def split_words(text: str) -> list[str]:
    words: list[str] = []
    for chunk in text.split():
        if chunk.isalnum():          # most words: nothing to split
            split = _BARE_CONTRACTIONS.get(chunk.lower())
            words.extend((chunk[:split], chunk[split:]) if split else (chunk,))
        elif not any(char.isalnum() for char in chunk):
            words.extend((chunk,) if chunk in _WHOLE_MARKS else _MULTI_MARK.findall(chunk))
        elif chunk[:-1].isalnum() and chunk[-1] not in _KEPT_SUFFIXES:
            # a word and one mark ("end.", "so,"): what _split_chunk makes of it, without its loops and regexes
            words.extend((chunk,) if _ABBREVIATION.match(chunk) else (chunk[:-1], chunk[-1]))
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
    while chunk and not chunk[-1].isalnum() and chunk[-1] not in _KEPT_SUFFIXES and not _ABBREVIATION.match(chunk):
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
    """Sentences in one line: words ending in sentence-final punctuation (closing quotes and brackets allowed
    after it), abbreviations such as "Dr." and "U.S." excepted; at least 1."""
    ends = sum(1 for chunk in line.split() if _SENTENCE_END.search(chunk) and not _ABBREVIATION.match(chunk))
    return max(1, ends)


_SENTENCE_TERMINAL = regex.compile(r"\p{Sentence_Terminal}")


def ends_in_sentence_terminal(line: str) -> bool:
    """Whether the line's last character is a Unicode Sentence_Terminal (., !, ?, 。, ।, ؟, ...): 'line ends in
    punctuation'. (Listing every such character first took each worker 0.25-0.5 s, scanning all of Unicode.)"""
    return bool(line) and _SENTENCE_TERMINAL.match(line[-1]) is not None


def punctuation_only(word: str) -> bool:
    """A word made only of punctuation or symbols (no letter, digit or other character)."""
    if word[:1].isalnum():          # most words: settled by their first character
        return False
    return all(not char.isalnum() and not char.isspace() and char != "_" for char in word)
