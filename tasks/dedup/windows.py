"""Hashed word windows, the keys of substring dedup (tasks/dedup/substrings.py): every run of `min_words`
consecutive words of a document (lower-cased, split on white space), hashed by a polynomial rolling hash over
64-bit word hashes, so a window has the same key in whatever document or position it occurs."""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from configs.dedup import SubstringDedupConfig
from tasks.dedup.normalize import key64

WINDOW_SCHEMA = pa.schema([("window_key", pa.int64()), ("doc", pa.int64()), ("text_key", pa.int64()),
                           ("word", pa.int32())])
_WORD = re.compile(r"\S+")
_BASE = np.uint64(0x9E3779B97F4A7C15)                # odd, so it has an inverse modulo 2^64
_BASE_INVERSE = np.uint64(pow(int(_BASE), -1, 1 << 64))


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the text's words."""
    return [match.span() for match in _WORD.finditer(text)]


def window_keys(text: str, spans: list[tuple[int, int]], min_words: int) -> np.ndarray:
    """The hash of every window of `min_words` consecutive words (int64), one per starting word."""
    count = len(spans) - min_words + 1
    if count <= 0:
        return np.empty(0, np.int64)
    words = [text[start:end].lower() for start, end in spans]
    hashes = {word: key64(word) for word in set(words)}          # each distinct word hashed once
    hashed = np.array([hashes[word] for word in words], np.int64).view(np.uint64)
    # Integer arithmetic on uint64 arrays wraps modulo 2^64, which is the ring the hash lives in.
    powers = np.cumprod(np.concatenate([np.ones(1, np.uint64), np.full(len(hashed) - 1, _BASE, np.uint64)]))
    prefix = np.concatenate([np.zeros(1, np.uint64), np.cumsum(hashed * powers, dtype=np.uint64)])
    inverse = np.cumprod(np.concatenate([np.ones(1, np.uint64), np.full(count - 1, _BASE_INVERSE, np.uint64)]))
    keys = (prefix[min_words:min_words + count] - prefix[:count]) * inverse
    return keys.view(np.int64)


def window_rows(texts: list[str], docs: np.ndarray, text_keys: list[int], config: SubstringDedupConfig) -> pa.Table:
    """The features step's rows: every window of every document, with its document and starting word."""
    keys, owners, owner_texts, starts = [], [], [], []
    for text, doc, text_key in zip(texts, docs.tolist(), text_keys):
        found = window_keys(text, word_spans(text), config.min_words)
        keys.append(found)
        owners.append(np.full(found.size, doc, np.int64))
        owner_texts.append(np.full(found.size, text_key, np.int64))
        starts.append(np.arange(found.size, dtype=np.int32))
    columns = [np.concatenate(values) if values else np.empty(0, dtype)
               for values, dtype in ((keys, np.int64), (owners, np.int64), (owner_texts, np.int64),
                                     (starts, np.int32))]
    return pa.table(dict(zip(WINDOW_SCHEMA.names, columns)), schema=WINDOW_SCHEMA)
