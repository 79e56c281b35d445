"""Fresh prose from the public-domain reference texts, handed out at most once per corpus.

Real pages alone are too few for thousands of distinct originals, so new articles are written into real page
templates with this text. Handing out every paragraph once keeps the duplicate ground truth clean: no two
generated pages share text unless a duplicate was made on purpose.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

REFERENCE_DIR = Path("reference")
SOURCE_RANGE = "#paragraphs="
MIN_PARAGRAPH_WORDS = 40        # short paragraphs (dialogue, verse) are merged up to this
WIKITEXT_DETOKENIZE = [(re.compile(r" @(.)@ "), r"\1"), (re.compile(r" ([,.;:!?)'])"), r"\1"),
                       (re.compile(r"\( "), "(")]


@dataclass(frozen=True)
class Passage:
    paragraphs: list[str]
    source: str                  # reference file and paragraph range, for the labels

    @property
    def words(self) -> int:
        return sum(len(p.split()) for p in self.paragraphs)


class PassagePool:
    def __init__(self, data_dir: Path, rng: random.Random):
        root = data_dir / REFERENCE_DIR
        documents = [*sorted((root / "gutenberg_nltk").glob("*.txt")),
                     *sorted((root / "speeches_nltk").glob("*/*.txt")),
                     root / "wikitext-2" / "wiki.test.raw"]
        rng.shuffle(documents)
        self._root = data_dir
        self._pending = documents
        self._name = ""
        self._paragraphs: list[str] = []
        self._words_left = 0
        self._cursor = 0

    def take(self, min_words: int) -> Passage:
        """Consecutive paragraphs of one text, at least `min_words` long (a text's short tail is skipped)."""
        while self._words_left < min_words:
            self._open_next_document()
        first = self._cursor
        words = 0
        while words < min_words:
            words += len(self._paragraphs[self._cursor].split())
            self._cursor += 1
        self._words_left -= words
        return Passage(self._paragraphs[first:self._cursor], f"{self._name}{SOURCE_RANGE}{first}-{self._cursor - 1}")

    def _open_next_document(self) -> None:
        if not self._pending:
            raise RuntimeError("the reference texts are used up; generate a smaller corpus")
        path = self._pending.pop(0)
        self._name = path.relative_to(self._root).as_posix()
        self._paragraphs = _paragraphs_of(path)
        self._words_left = sum(len(p.split()) for p in self._paragraphs)
        self._cursor = 0


def passage_paragraphs(data_dir: Path, source: str) -> list[str]:
    """The paragraphs a `Passage.source` ("reference/...#paragraphs=first-last") names, read again."""
    path, span = source.split(SOURCE_RANGE)
    first, last = (int(number) for number in span.split("-"))
    return _paragraphs_of(data_dir / path)[first:last + 1]


def _paragraphs_of(path: Path) -> list[str]:
    return _merged(_raw_paragraphs(path))


def _raw_paragraphs(path: Path) -> list[str]:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")          # shakespeare-caesar.txt is ISO-8859-1
    text = text.replace("\r\n", "\n")
    if path.suffix == ".raw":                  # WikiText: one paragraph a line, "= Heading =" lines
        lines = [line.strip() for line in text.split("\n")]
        paragraphs = [line for line in lines if line and not line.startswith("=")]
        for pattern, replacement in WIKITEXT_DETOKENIZE:
            paragraphs = [pattern.sub(replacement, p) for p in paragraphs]
        return paragraphs
    if path.parent.parent.name == "speeches_nltk":     # speeches: one paragraph a line
        return [line.strip() for line in text.split("\n") if line.strip()]
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def _merged(paragraphs: list[str]) -> list[str]:
    merged, pending = [], []
    for paragraph in paragraphs:
        pending.append(paragraph)
        if sum(len(p.split()) for p in pending) >= MIN_PARAGRAPH_WORDS:
            merged.append(" ".join(pending))
            pending = []
    return merged
