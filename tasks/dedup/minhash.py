"""MinHash signatures (datasketch) over word or character n-gram shingles, and LSH band keys.

Shingles are hashed with numpy, never one Python call per word: a word's hash is a polynomial over its UTF-8
bytes (summed per word with `np.add.reduceat`), a character's is its code point; n consecutive token hashes are
combined polynomially and folded to 32 bits. The shingle hashes go to datasketch's batch path
(`MinHash.generator` -> `update_batch`, affine32 scheme) with the identity as its hash function.
"""
from __future__ import annotations

import operator

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from configs.dedup import MinHashConfig
from tasks.dedup.normalize import normalize_text

_MIX = np.uint64(0x100000001B3)          # FNV-1a 64-bit prime: mixes token hashes into an n-gram hash
_BYTE_BASE = np.uint64(0x9E3779B97F4A7C15)
_SPACE = 32


def token_hashes(text: str, lang: str, config: MinHashConfig) -> np.ndarray:
    """64-bit hashes of the normalized text's words (split on whitespace), or of its characters (spaces
    dropped) for scripts written without spaces between words."""
    normalized = " ".join(normalize_text(text, config.normalization).split())
    if lang in config.character_languages:
        return np.frombuffer(normalized.replace(" ", "").encode("utf-32-le", "surrogatepass"),
                             dtype=np.uint32).astype(np.uint64)
    data = np.frombuffer(normalized.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    if data.size == 0:
        return np.empty(0, dtype=np.uint64)
    is_space = data == _SPACE
    word_of_byte = np.cumsum(is_space)[~is_space]              # words are separated by exactly one space
    letters = data[~is_space].astype(np.uint64)
    starts = np.flatnonzero(np.r_[True, word_of_byte[1:] != word_of_byte[:-1]])
    position = np.arange(letters.size) - np.repeat(starts, np.diff(np.r_[starts, letters.size]))
    powers = np.cumprod(np.full(int(position.max()) + 1, _BYTE_BASE, dtype=np.uint64))  # wraps mod 2^64
    lengths = np.diff(np.r_[starts, letters.size]).astype(np.uint64)
    return np.add.reduceat((letters + np.uint64(1)) * powers[position], starts) + lengths


def shingle_hashes(tokens: np.ndarray, ngram: int) -> np.ndarray:
    """Unique 32-bit hashes of the n-grams of token hashes; fewer than n tokens make one shingle, none none."""
    if tokens.size == 0:
        return np.empty(0, dtype=np.uint32)
    windows = sliding_window_view(tokens, min(ngram, tokens.size))
    combined = np.zeros(len(windows), dtype=np.uint64)
    for column in windows.T:
        combined = combined * _MIX + column
    folded = (combined ^ (combined >> np.uint64(32))).astype(np.uint32)
    return np.unique(folded)


def signatures(shingle_sets: list[np.ndarray], num_perm: int, seed: int) -> np.ndarray:
    """(documents, num_perm) uint32 MinHash values; a document without shingles gets an all-max row."""
    # imported here: the package's import pulls in its LSH and scipy (~0.5 s), which the flow process, importing
    # the dedup stage to send its calls, does not need; the workers preload it (flows/dask_cluster.py)
    from datasketch import MinHash

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
