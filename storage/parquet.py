"""Parquet tables (zstd) on any fsspec URL, published atomically."""
from __future__ import annotations

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from storage.fs import atomic_output


def write_table(table: pa.Table, url: str, row_group_size: int | None = None) -> int:
    """Write `table` to `url` by atomic rename; returns the file's size in bytes."""
    with atomic_output(url) as tmp:
        with fsspec.open(tmp, "wb") as handle:
            pq.write_table(table, handle, compression="zstd", row_group_size=row_group_size)
    fs, path = fsspec.core.url_to_fs(url)
    return int(fs.size(path))


def read_table(url: str, columns: list[str] | None = None) -> pa.Table:
    # ParquetFile, not pq.read_table: the dataset machinery behind the latter costs ~1 ms more per file, which
    # adds up over the many small shards and bucket files a corpus-level step reads.
    with fsspec.open(url, "rb") as handle:
        return pq.ParquetFile(handle).read(columns=columns)
