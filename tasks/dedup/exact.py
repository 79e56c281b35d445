"""Exact and URL dedup reducers, one hash bucket each.

Exact: documents with the same normalized-text key are joined by an edge (to the group's smallest document);
which one stays is decided with the near-duplicates in `clusters`. URL: of the captures of one normalized URL
the newest stays (ties: the smallest id); the others are URL losers, each named with its winner.
"""
from __future__ import annotations

import pyarrow as pa

from storage.parquet import write_table
from tasks.dedup.features import KEY_SCHEMA
from tasks.dedup.groups import runs, star_edges
from tasks.dedup.ranking import rank_key
from tasks.dedup.shuffle import read_bucket

URL_LOSER_SCHEMA = pa.schema([("doc", pa.int64()), ("winner", pa.int64()), ("winner_id", pa.string())])


def exact_edges(work: str, bucket: int, parts: list[str], enabled: bool) -> dict:
    keys = read_bucket(f"{work}/keys", bucket, parts, KEY_SCHEMA) if enabled else KEY_SCHEMA.empty_table()
    edges = star_edges(keys.column("text_key").to_numpy(), keys.column("doc").to_numpy())
    write_table(edges, f"{work}/edges/exact/b{bucket:05d}.parquet")
    return {"exact_edges": edges.num_rows}


def url_losers(work: str, bucket: int, parts: list[str], enabled: bool) -> dict:
    keys = read_bucket(f"{work}/urls", bucket, parts, KEY_SCHEMA) if enabled else KEY_SCHEMA.empty_table()
    docs, ids, dates = (keys.column(name).to_numpy(zero_copy_only=False) for name in ("doc", "id", "date"))
    url_keys = keys.column("url_key").to_numpy()
    sorted_docs, starts, ends = runs(url_keys, docs)
    position = {doc: index for index, doc in enumerate(docs.tolist())}
    losers, winners, winner_ids = [], [], []
    for start, end in zip(starts.tolist(), ends.tolist()):
        if end - start < 2:
            continue
        group = [position[doc] for doc in sorted_docs[start:end].tolist()]
        winner = min(group, key=lambda row: rank_key("newest", ids[row], dates[row] or "", 0))
        for row in group:
            if row != winner:
                losers.append(docs[row])
                winners.append(docs[winner])
                winner_ids.append(ids[winner])
    table = pa.table({"doc": pa.array(losers, pa.int64()), "winner": pa.array(winners, pa.int64()),
                      "winner_id": pa.array(winner_ids, pa.string())}, schema=URL_LOSER_SCHEMA)
    write_table(table, f"{work}/url_losers/b{bucket:05d}.parquet")
    return {"url_duplicates": table.num_rows}

