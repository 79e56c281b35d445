"""LSH reducer, one hash bucket of band keys: candidate pairs, verified against the full MinHash signatures.

Documents sharing a band key are candidates. A candidate pair becomes an edge of the duplicate graph only if
the Jaccard similarity estimated from all `bands x rows` signature values reaches `verify_jaccard`: LSH lets
through pairs well below the threshold (the S-curve's tail) and verification removes them, which is what
keeps precision where the threshold says.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from configs.dedup import MinHashConfig
from storage.arrays import load_array
from storage.parquet import write_table
from tasks.dedup.features import BAND_SCHEMA, part_name, part_of, row_of, signatures_path
from tasks.dedup.groups import EDGE_SCHEMA, candidate_pairs
from tasks.dedup.shuffle import read_bucket

class SignatureReader:
    """Rows of the per-shard signature matrices, memory-mapped: a reducer touches only the rows it compares."""

    def __init__(self, work: str):
        self.work = work
        self.matrices: dict[int, np.ndarray] = {}

    def rows(self, docs: np.ndarray) -> np.ndarray:
        parts = part_of(docs)
        out = None
        for part in np.unique(parts).tolist():
            matrix = self._matrix(part)
            if out is None:
                out = np.empty((docs.size, matrix.shape[1]), dtype=matrix.dtype)
            mask = parts == part
            out[mask] = matrix[row_of(docs[mask])]
        return out if out is not None else np.empty((0, 0), np.uint32)

    def _matrix(self, part: int) -> np.ndarray:
        if part not in self.matrices:
            self.matrices[part] = load_array(signatures_path(self.work, part_name(part)), mmap=True)
        return self.matrices[part]


def verified_edges(work: str, bucket: int, parts: list[str], config: MinHashConfig) -> dict:
    enabled = config.enabled
    bands = read_bucket(f"{work}/bands", bucket, parts, BAND_SCHEMA) if enabled else BAND_SCHEMA.empty_table()
    left, right = candidate_pairs(bands.column("band_key").to_numpy(), bands.column("doc").to_numpy(),
                                  config.max_pairs_bucket)
    if config.verify_jaccard is None or left.size == 0:
        keep = np.ones(left.size, dtype=bool)
    else:
        reader = SignatureReader(work)
        similarity = (reader.rows(left) == reader.rows(right)).mean(axis=1)
        keep = similarity >= config.verify_jaccard
    edges = pa.table({"a": left[keep], "b": right[keep]}, schema=EDGE_SCHEMA)
    write_table(edges, f"{work}/edges/lsh/b{bucket:05d}.parquet")
    return {"candidate_pairs": int(left.size),
            "verified_pairs": int(keep.sum())}
