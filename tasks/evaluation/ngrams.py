"""Word n-gram fingerprints for contamination checks (13-grams, as GPT-3 and Dolma use).

Words are lowercased runs of letters and digits, so punctuation, spacing and case (`wiki.test.raw`'s spaced
punctuation against a web page's) do not hide a copy. Each n-gram becomes a 64-bit hash: word hashes combined
by a polynomial over the window, computed with numpy for every window at once.
"""
from __future__ import annotations

import hashlib
import re

import numpy as np

NGRAM = 13
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_BASE = np.uint64(1_000_003)


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def ngram_hashes(text: str, n: int = NGRAM) -> np.ndarray:
    """The distinct n-gram hashes of `text` (uint64, sorted); a text of fewer than n words has none."""
    return np.unique(_window_hashes(words(text), n))


def _window_hashes(tokens: list[str], n: int) -> np.ndarray:
    """The hash of every window of n consecutive words, in order."""
    if len(tokens) < n:
        return np.empty(0, np.uint64)
    cache: dict[str, int] = {}
    for word in tokens:
        if word not in cache:
            cache[word] = _word_hash(word)
    hashes = np.fromiter((cache[word] for word in tokens), np.uint64, len(tokens))
    windows = len(tokens) - n + 1
    combined = np.zeros(windows, np.uint64)
    with np.errstate(over="ignore"):
        for offset in range(n):
            combined = combined * _BASE + hashes[offset:offset + windows]
    return combined


class NgramSet:
    """A sorted set of n-gram hashes with a fast "does this text share one" test."""

    def __init__(self, hashes: np.ndarray, n: int = NGRAM):
        self.hashes, self.n = np.unique(hashes.astype(np.uint64)), n

    @classmethod
    def of_texts(cls, texts: list[str], n: int = NGRAM) -> "NgramSet":
        parts = [ngram_hashes(text, n) for text in texts]
        return cls(np.concatenate(parts) if parts else np.empty(0, np.uint64), n)

    @classmethod
    def load(cls, path: str) -> "NgramSet":
        with np.load(path) as saved:
            return cls(saved["hashes"], int(saved["n"]))

    def save(self, path: str) -> None:
        with open(path, "wb") as handle:          # np.savez would add ".npz" to a name without it
            np.savez(handle, hashes=self.hashes, n=np.int64(self.n))

    def __len__(self) -> int:
        return int(self.hashes.size)

    def shared(self, text: str) -> int:
        """How many of the text's distinct n-grams are in the set."""
        return int(np.count_nonzero(self._members(ngram_hashes(text, self.n))))

    def lines_sharing(self, lines: list[str]) -> set[int]:
        """Indices of the lines that a shared n-gram touches, n-grams running across line ends included (the
        lines are read as one text)."""
        per_line = [words(line) for line in lines]
        line_of_word = np.repeat(np.arange(len(lines)), [len(tokens) for tokens in per_line])
        starts = np.flatnonzero(self._members(_window_hashes([w for tokens in per_line for w in tokens], self.n)))
        touched: set[int] = set()
        for start in starts.tolist():
            touched.update(range(int(line_of_word[start]), int(line_of_word[start + self.n - 1]) + 1))
        return touched

    def _members(self, candidates: np.ndarray) -> np.ndarray:
        if not candidates.size or not self.hashes.size:
            return np.zeros(candidates.size, dtype=bool)
        positions = np.searchsorted(self.hashes, candidates).clip(max=self.hashes.size - 1)
        return self.hashes[positions] == candidates
