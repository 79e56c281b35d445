"""A shuffle through storage: mappers write each table split by hash bucket, one reducer reads one bucket.

`<root>/b<bucket>/<part>.parquet` holds the rows of mapper `part` whose key falls in `bucket`. No process
ever holds more than one mapper's output or one bucket, whatever the corpus size; the number of buckets
sets the reducers' parallelism and memory.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from storage.parquet import read_table, write_table


def bucket_of(keys: np.ndarray, buckets: int) -> np.ndarray:
    # Keys are uniform 64-bit hashes, so their value modulo the bucket count spreads evenly.
    return (keys.view(np.uint64) % np.uint64(buckets)).astype(np.int64)


def write_buckets(table: pa.Table, key: str, buckets: int, root: str, part: str) -> None:
    """Write `table` split by `key` into every bucket (empty files included, so a reducer knows what to read)."""
    assignment = bucket_of(table.column(key).to_numpy(), buckets) if table.num_rows else np.empty(0, np.int64)
    order = np.argsort(assignment, kind="stable")
    bounds = np.searchsorted(assignment[order], np.arange(buckets + 1))
    for bucket in range(buckets):
        write_table(table.take(order[bounds[bucket]:bounds[bucket + 1]]), f"{root}/b{bucket:05d}/{part}.parquet")


def read_bucket(root: str, bucket: int, parts: list[str], schema: pa.Schema) -> pa.Table:
    tables = [read_table(f"{root}/b{bucket:05d}/{part}.parquet") for part in parts]
    return pa.concat_tables(tables) if tables else schema.empty_table()
