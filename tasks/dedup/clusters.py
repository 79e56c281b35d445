"""Connected components of the duplicate graph (exact and verified near-duplicate edges) and, per document in
a cluster or beaten by a newer capture of its URL, the decision: kept, or removed with a reason.

One task for the whole corpus, but it holds only documents that have an edge or a URL duplicate (a fraction of
the corpus), never texts; see the README's scale-out notes for what replaces it at billions of documents.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from configs.dedup import DedupConfig
from storage.arrays import save_array
from storage.document_shard import read_documents
from storage.parquet import read_table, write_table
from tasks.dedup.features import KEY_SCHEMA, part_of, row_of
from tasks.dedup.groups import EDGE_SCHEMA
from tasks.dedup.exact import URL_LOSER_SCHEMA
from tasks.dedup.ranking import rank_key
from tasks.dedup.shuffle import read_bucket

DECISION_SCHEMA = pa.schema([("doc", pa.int64()), ("kept", pa.bool_()), ("reason", pa.string()),
                             ("dup_cluster", pa.string()), ("dup_cluster_size", pa.int64())])
EXAMPLE_CLUSTERS = 6
EXAMPLE_CHARS = 400
SHOWN_MEMBERS = 4          # members of an example cluster whose text is shown


def cluster_decisions(work: str, parts: list[str], shard_urls: list[str], config: DedupConfig) -> dict:
    edges = _concat([f"{work}/edges/{kind}/b{bucket:05d}.parquet" for kind in ("exact", "lsh")
                     for bucket in range(config.buckets)], EDGE_SCHEMA)
    losers = _concat([f"{work}/url_losers/b{bucket:05d}.parquet" for bucket in range(config.buckets)],
                     URL_LOSER_SCHEMA)
    left, right = edges.column("a").to_numpy(), edges.column("b").to_numpy()
    loser_docs, winner_docs = losers.column("doc").to_numpy(), losers.column("winner").to_numpy()
    involved = np.unique(np.concatenate([left, right, loser_docs, winner_docs]))
    graph = coo_matrix((np.ones(left.size, dtype=np.int8),
                        (np.searchsorted(involved, left), np.searchsorted(involved, right))),
                       shape=(involved.size, involved.size))
    _, labels = connected_components(graph, directed=False)
    info = _document_keys(work, parts, config.buckets, involved)
    winner_of = dict(zip(loser_docs.tolist(), winner_docs.tolist()))

    rows: list[tuple] = []
    sizes: dict[int, int] = {}
    clusters: list[list[int]] = []
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(labels[order]) != 0, True])
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        members = involved[order[start:end]].tolist()
        decided = _decide(members, info, winner_of, config.keep)
        rows.extend(decided)
        if len(members) > 1:
            sizes[len(members)] = sizes.get(len(members), 0) + 1
            clusters.append([row[0] for row in sorted(decided, key=lambda row: not row[1])])
    decisions = pa.Table.from_pylist([dict(zip(DECISION_SCHEMA.names, row)) for row in rows if not row[1]
                                      or row[4] > 1], schema=DECISION_SCHEMA)
    _write_per_part(decisions, work, parts)
    removed = decisions.filter(pc.invert(decisions.column("kept")))
    save_array(np.sort(removed.column("doc").to_numpy()), f"{work}/removed.npy")
    reasons = pc.value_counts(removed.column("reason")).to_pylist()
    return {"clusters": len(clusters), "documents_in_clusters": int(sum(size * count for size, count in sizes.items())),
            "removed": {entry["values"]: entry["counts"] for entry in reasons},
            "cluster_sizes": {str(size): count for size, count in sorted(sizes.items())},
            "examples": _examples(clusters, decisions, shard_urls)}


def _decide(members: list[int], info: dict, winner_of: dict[int, int], policy: str) -> list[tuple]:
    """(doc, kept, reason, dup_cluster, dup_cluster_size) for each member of one component.

    An older capture of a URL never stays; a component of only such captures is removed under
    `url_duplicate` (the newest capture of each URL stays in its own component)."""
    eligible = [doc for doc in members if doc not in winner_of]
    size = len(members)
    if not eligible:
        return [(doc, False, "url_duplicate", info[winner_of[doc]]["id"], size) for doc in members]
    keeper = min(eligible, key=lambda doc: rank_key(policy, info[doc]["id"], info[doc]["date"] or "",
                                                      info[doc]["length"]))
    keeper_id = info[keeper]["id"]
    decided = []
    for doc in members:
        if doc == keeper:
            decided.append((doc, True, "", keeper_id, size))
        elif info[doc]["text_key"] == info[keeper]["text_key"]:
            decided.append((doc, False, "exact_duplicate", keeper_id, size))
        elif doc in winner_of:
            decided.append((doc, False, "url_duplicate", keeper_id, size))
        else:
            decided.append((doc, False, "near_duplicate", keeper_id, size))
    return decided


def _document_keys(work: str, parts: list[str], buckets: int, docs: np.ndarray) -> dict[int, dict]:
    """id, date, length and text key of the given documents, read from the key shuffle."""
    wanted = pa.array(docs, pa.int64())
    found = {}
    for bucket in range(buckets):
        keys = read_bucket(f"{work}/keys", bucket, parts, KEY_SCHEMA)
        for row in keys.filter(pc.is_in(keys.column("doc"), value_set=wanted)).to_pylist():
            found[row["doc"]] = row
    return found


def _write_per_part(decisions: pa.Table, work: str, parts: list[str]) -> None:
    owner = part_of(decisions.column("doc").to_numpy())
    for part in parts:
        write_table(decisions.filter(pa.array(owner == int(part))), f"{work}/decisions/{part}.parquet")


def _examples(clusters: list[list[int]], decisions: pa.Table, shard_urls: list[str]) -> list[list[dict]]:
    """A few clusters to read: the largest ones and the largest with a near (not exact) duplicate, keeper first."""
    reason = dict(zip(decisions.column("doc").to_pylist(), decisions.column("reason").to_pylist()))
    by_size = sorted(clusters, key=lambda members: (-len(members), members[0]))
    near = [members for members in by_size if any(reason.get(doc) == "near_duplicate" for doc in members)]
    chosen = []
    for members in by_size[:EXAMPLE_CLUSTERS // 2] + near:
        if members not in chosen and len(chosen) < EXAMPLE_CLUSTERS:
            chosen.append(members)
    shown = [members[:SHOWN_MEMBERS] for members in chosen]
    texts = _documents(sorted({doc for members in shown for doc in members}), shard_urls)
    status = lambda doc: {"kept": not reason.get(doc), "reason": reason.get(doc) or None}  # noqa: E731
    return [[texts[doc] | status(doc) for doc in members[:SHOWN_MEMBERS]]
            + [status(doc) for doc in members[SHOWN_MEMBERS:]] for members in chosen]


def _documents(docs: list[int], shard_urls: list[str]) -> dict[int, dict]:
    found = {}
    docs_array = np.array(docs, np.int64)
    for part in np.unique(part_of(docs_array)).tolist():
        rows = docs_array[part_of(docs_array) == part]
        table = read_documents(shard_urls[part], ["id", "url", "text"]).take(row_of(rows))
        for doc, row in zip(rows.tolist(), table.to_pylist()):
            found[doc] = row | {"text": row["text"][:EXAMPLE_CHARS]}
    return found


def _concat(urls: list[str], schema: pa.Schema) -> pa.Table:
    tables = [read_table(url) for url in urls]
    return pa.concat_tables(tables) if tables else schema.empty_table()
