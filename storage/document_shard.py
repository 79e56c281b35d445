"""Document shards: one Parquet file (zstd) per input shard, one row per document.

Core columns are fixed here; later stages add attribute columns (dup_cluster, gopher_*, kenlm_ppl, ...).
"""
from __future__ import annotations

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from storage.fs import atomic_output

DOCUMENT_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("url", pa.string()),
    ("text", pa.large_string()),
    ("lang", pa.string()),
    ("lang_score", pa.float32()),
    ("source", pa.string()),
    ("warc_path", pa.string()),
    ("warc_record_id", pa.string()),
    ("warc_offset", pa.int64()),
    ("warc_date", pa.string()),
    ("charset", pa.string()),
])


def write_documents(rows: dict[str, list], url: str, schema: pa.Schema = DOCUMENT_SCHEMA) -> int:
    """Write columns (name -> list of values) as one Parquet shard, published atomically. Returns bytes written."""
    table = pa.Table.from_pydict(rows, schema=schema)
    with atomic_output(url) as tmp:
        with fsspec.open(tmp, "wb") as handle:
            pq.write_table(table, handle, compression="zstd", row_group_size=8192)
    fs, path = fsspec.core.url_to_fs(url)
    return int(fs.size(path))


def read_documents(url: str, columns: list[str] | None = None) -> pa.Table:
    with fsspec.open(url, "rb") as handle:
        return pq.read_table(handle, columns=columns)
