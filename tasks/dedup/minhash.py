"""MinHash signatures (datasketch) over word or character n-gram shingles, and LSH band keys.

Shingle hashes are computed with numpy (CRC32 per token, combined over the n-gram polynomially, folded to 32
bits) and handed to datasketch's batch path (`MinHash.generator` -> `update_batch`, affine32 scheme), whose
hash function is then the identity; that keeps per-shingle Python work to one list element.
"""
from __future__ import annotations

import hashlib
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


def band_keys(matrix: np.ndarray, bands: int, rows: int, scope: str) -> np.ndarray:
    """(documents, bands) int64 keys: documents share a key in band b iff their rows of band b are equal
    (up to a 64-bit collision) and they are in the same scope."""
    keys = np.empty((matrix.shape[0], bands), dtype=np.int64)
    scope_key = hashlib.blake2b(scope.encode("utf-8"), digest_size=16).digest()
    for band in range(bands):
        block = np.ascontiguousarray(matrix[:, band * rows:(band + 1) * rows])
        for row_index, row in enumerate(block):
            digest = hashlib.blake2b(row.tobytes(), digest_size=8, key=scope_key, salt=band.to_bytes(16, "little"))
            keys[row_index, band] = int.from_bytes(digest.digest(), "little", signed=True)
    return keys


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Share of equal signature values: the MinHash estimate of the shingle sets' Jaccard similarity."""
    return float(np.count_nonzero(a == b)) / a.size
