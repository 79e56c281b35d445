"""MinHash signatures (datasketch) over word or character n-gram shingles, and LSH band keys.

Shingle hashes are computed with numpy (CRC32 per token, combined over the n-gram polynomially, folded to 32
bits) and handed to datasketch's batch path (`MinHash.generator` -> `update_batch`, affine32 scheme), whose
hash function is then the identity; that keeps per-shingle Python work to one list element.
"""
from __future__ import annotations

import operator
import zlib

import numpy as np
from datasketch import MinHash
from numpy.lib.stride_tricks import sliding_window_view

from configs.dedup import MinHashConfig
from tasks.dedup.normalize import normalize_text

_MIX = np.uint64(0x100000001B3)          # FNV-1a 64-bit prime: mixes token hashes into an n-gram hash


def tokens(text: str, lang: str, config: MinHashConfig) -> list[str]:
    """Words of the normalized text, or its characters (spaces dropped) for scripts written without spaces."""
    normalized = normalize_text(text, config.normalization)
    if lang in config.character_languages:
        return list(normalized.replace(" ", ""))
    return normalized.split()


def shingle_hashes(words: list[str], ngram: int) -> np.ndarray:
    """Unique 32-bit hashes of the n-grams; a text shorter than n tokens is one shingle, an empty one none."""
    if not words:
        return np.empty(0, dtype=np.uint32)
    token_hashes = np.fromiter((zlib.crc32(word.encode("utf-8", "surrogatepass")) for word in words),
                               dtype=np.uint64, count=len(words))
    windows = sliding_window_view(token_hashes, min(ngram, len(words)))
    combined = np.zeros(len(windows), dtype=np.uint64)
    for column in windows.T:
        combined = combined * _MIX + column
    folded = (combined ^ (combined >> np.uint64(32))).astype(np.uint32)
    return np.unique(folded)


def signatures(shingle_sets: list[np.ndarray], num_perm: int, seed: int) -> np.ndarray:
    """(documents, num_perm) uint32 MinHash values; a document without shingles gets an all-max row."""
    matrix = np.full((len(shingle_sets), num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
    present = [index for index, hashes in enumerate(shingle_sets) if hashes.size]
    batches = (shingle_sets[index].tolist() for index in present)
    for index, minhash in zip(present, MinHash.generator(batches, num_perm=num_perm, seed=seed,
                                                         hashfunc=operator.index, scheme="affine32")):
        matrix[index] = minhash.hashvalues
    return matrix


def band_keys(matrix: np.ndarray, bands: int, rows: int, salts: np.ndarray) -> np.ndarray:
    """(documents, bands) int64 keys: two documents share a key in band b if their signature rows of band b
    are equal and their salts (scope keys: 0 when every document is compared with every other) are equal.
    Unequal rows share a key only by a 64-bit collision, which verification then rejects."""
    keys = np.empty((matrix.shape[0], bands), dtype=np.int64)
    for band in range(bands):
        mixed = _avalanche(salts.view(np.uint64) ^ np.uint64(band + 1))
        for column in matrix[:, band * rows:(band + 1) * rows].T:
            mixed = _avalanche(mixed ^ column.astype(np.uint64))
        keys[:, band] = mixed.view(np.int64)
    return keys


def _avalanche(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer: a bijection on 64-bit values in which every input bit flips about half the
    output bits (uint64 arithmetic wraps in numpy, as the algorithm needs)."""
    values = values ^ (values >> np.uint64(30))
    values = values * np.uint64(0xBF58476D1CE4E5B9)
    values = values ^ (values >> np.uint64(27))
    values = values * np.uint64(0x94D049BB133111EB)
    return values ^ (values >> np.uint64(31))


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Share of equal signature values: the MinHash estimate of the shingle sets' Jaccard similarity."""
    return float(np.count_nonzero(a == b)) / a.size
