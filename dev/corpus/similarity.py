"""Main-content text and 5-word-shingle Jaccard, the yardstick for near-duplicate labels.

Shingles are whitespace-separated word 5-grams, kept as sorted unique 64-bit hashes (CRC32 per word, combined
polynomially), which makes set operations numpy-fast; a hash collision would merge two shingles, which for
texts of this size does not move a Jaccard value in its fourth decimal.
"""
from __future__ import annotations

import zlib

import numpy as np
from resiliparse.extract.html2text import extract_plain_text

SHINGLE_WORDS = 5
HASH_MULTIPLIER = np.uint64(0x100000001B3)     # FNV-1a 64-bit prime, to mix the word hashes


def main_text(html: str) -> str:
    return extract_plain_text(html, main_content=True)


def shingles(text: str) -> np.ndarray:
    """Sorted unique hashes of the text's 5-word shingles; a text under five words is one shingle."""
    words = text.split()
    if not words:
        return np.empty(0, dtype=np.uint64)
    word_hashes = np.fromiter((zlib.crc32(word.encode("utf-8")) for word in words), dtype=np.uint64,
                              count=len(words))
    width = min(SHINGLE_WORDS, len(words))
    combined = np.zeros(len(words) - width + 1, dtype=np.uint64)
    for offset in range(width):
        combined = combined * HASH_MULTIPLIER + word_hashes[offset:len(words) - width + 1 + offset]
    return np.unique(combined)


def shared(a: np.ndarray, b: np.ndarray) -> int:
    """How many shingles the two shingle sets have in common."""
    return int(np.intersect1d(a, b, assume_unique=True).size)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    if not a.size and not b.size:
        return 1.0
    common = shared(a, b)
    return common / (a.size + b.size - common)
