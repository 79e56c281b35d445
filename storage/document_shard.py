"""Document shards: one Parquet file (zstd) per input shard, one row per document.

Core columns are fixed here; later stages add attribute columns (dup_cluster, gopher_*, kenlm_ppl, ...).
"""
from __future__ import annotations

import pyarrow as pa

from storage.parquet import read_table, write_table

ROW_GROUP_SIZE = 8192
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
    return write_table(pa.Table.from_pydict(rows, schema=schema), url, row_group_size=ROW_GROUP_SIZE)


def read_documents(url: str, columns: list[str] | None = None) -> pa.Table:
    return read_table(url, columns)
