"""Grouping helpers over (key, doc) columns: which documents share a key, as edges of the duplicate graph."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

EDGE_SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64())])


def runs(keys: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort by (key, doc); returns the sorted docs and the start and end index of each run of equal keys."""
    order = np.lexsort((docs, keys))
    sorted_keys, sorted_docs = keys[order], docs[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if keys.size else np.empty(0, np.int64)
    ends = np.r_[starts[1:], keys.size].astype(np.int64)
    return sorted_docs, starts, ends


def star_edges(keys: np.ndarray, docs: np.ndarray) -> pa.Table:
    """Each document of a group sharing a key -> the group's smallest document (one edge per extra member)."""
    sorted_docs, starts, ends = runs(keys, docs)
    firsts = np.repeat(sorted_docs[starts], ends - starts)
    extra = sorted_docs != firsts
    return pa.table({"a": sorted_docs[extra], "b": firsts[extra]}, schema=EDGE_SCHEMA)


def candidate_pairs(keys: np.ndarray, docs: np.ndarray, max_group_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (a < b) of documents sharing a key, without repeats: every pair of a group of at most
    `max_group_pairs` documents, and for a bigger group each document with its successor and with the first
    (a chain and a star: connected if the verified edges hold, at linear cost)."""
    sorted_docs, starts, ends = runs(keys, docs)
    left, right = [], []
    for start, end in zip(starts.tolist(), ends.tolist()):
        group = np.unique(sorted_docs[start:end])
        if group.size < 2:
            continue
        if group.size <= max_group_pairs:
            first, second = np.triu_indices(group.size, k=1)
            left.append(group[first])
            right.append(group[second])
        else:
            left.extend([group[:-1], np.repeat(group[0], group.size - 2)])
            right.extend([group[1:], group[2:]])
    if not left:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    pairs = np.unique(np.stack([np.concatenate(left), np.concatenate(right)], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]
