"""Per duplicate cluster (a connected component of the exact and verified near-duplicate edges, see
`components`) and per document beaten by a newer capture of its URL, the decision: kept, or removed with a reason.

Decided per bucket of component labels (a component is whole in one bucket), so memory per call is one bucket of
the documents that have an edge or a URL duplicate, never texts. Writes `decisions/<part>/l<bucket>.parquet` for
the apply step and `removed/l<bucket>.npy` for the repeated-paragraph count.
"""
from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from configs.dedup import DedupConfig
from storage.arrays import save_array
from storage.document_shard import read_documents
from storage.parquet import write_table
from tasks.dedup.components import component_members, read_members
from tasks.dedup.features import part_of, row_of
from tasks.dedup.groups import runs
from tasks.dedup.lsh import SignatureReader
from tasks.dedup.ranking import rank_key
from tasks.fan_out import fan_out, per_thread

DECISION_SCHEMA = pa.schema([("doc", pa.int64()), ("kept", pa.bool_()), ("reason", pa.string()),
                             ("dup_cluster", pa.string()), ("dup_cluster_size", pa.int64()),
                             ("similarity", pa.float64())])
EXAMPLE_CLUSTERS = 6
EXAMPLE_CHARS = 400
SHOWN_MEMBERS = 4          # members of an example cluster whose text is shown


def cluster_decisions(work: str, parts: list[str], shard_urls: list[str], config: DedupConfig) -> dict:
    """Components, then decisions per label bucket; returns the clusters' counts and a few examples to read."""
    rounds = component_members(work, parts, config.buckets)
    decided = fan_out(functools.partial(decide_bucket, work, parts, config), range(config.buckets),
                      per_thread(config.buckets))
    removed, sizes = Counter(), Counter()
    for result in decided:
        removed.update(result["removed"])
        sizes.update({int(size): count for size, count in result["cluster_sizes"].items()})
    return {"clusters": sum(sizes.values()),
            "documents_in_clusters": sum(size * count for size, count in sizes.items()),
            "removed": dict(sorted(removed.items())),
            "cluster_sizes": {str(size): count for size, count in sorted(sizes.items())},
            "propagation_rounds": rounds,
            "examples": _examples([cluster for result in decided for cluster in result["candidates"]], shard_urls)}


def decide_bucket(work: str, parts: list[str], config: DedupConfig, bucket: int) -> dict:
    """Decide every component whose label falls in `bucket`."""
    members = read_members(work, config.buckets, bucket)
    info = {row["doc"]: row for row in members.to_pylist()}
    docs, starts, ends = runs(members.column("label").to_numpy(), members.column("doc").to_numpy())
    rows: list[tuple] = []
    sizes: Counter = Counter()
    clusters: list[list[int]] = []
    compared: list[int] = []
    for start, end in zip(starts.tolist(), ends.tolist()):
        component = docs[start:end].tolist()
        decided, kept_copies = _decide(component, info, config.keep)
        rows.extend(decided)
        compared.extend(kept_copies)
        if len(component) > 1:
            sizes[len(component)] += 1
            clusters.append([row[0] for row in sorted(decided, key=lambda row: not row[1])])
    similarity = _similarities(work, rows, compared, config)
    decisions = pa.Table.from_pylist([dict(zip(DECISION_SCHEMA.names, (*row, score)))
                                      for row, score in zip(rows, similarity) if not row[1] or row[4] > 1],
                                     schema=DECISION_SCHEMA)
    write_per_part(decisions, parts, lambda part: decisions_path(work, part, bucket))
    removed = [row for row in rows if not row[1]]
    save_array(np.sort(np.array([row[0] for row in removed], np.int64)), removed_path(work, bucket))
    reason = {row[0]: row[2] for row in removed}
    candidates = [[[doc, reason.get(doc, "")] for doc in members] for members in _candidates(clusters, reason)]
    return {"removed": dict(Counter(row[2] for row in removed)), "cluster_sizes": dict(sizes),
            "candidates": candidates}


def removed_path(work: str, bucket: int) -> str:
    return f"{work}/removed/l{bucket:05d}.npy"


def decisions_path(work: str, part: str, bucket: int) -> str:
    return f"{work}/decisions/{part}/l{bucket:05d}.parquet"


def _similarities(work: str, rows: list[tuple], compared: list[int], config: DedupConfig) -> list[float | None]:
    """Each decided document's similarity to the copy that stays: 1 for itself and its exact copies, else the
    Jaccard similarity its MinHash signature estimates (none without MinHash)."""
    docs = np.array([row[0] for row in rows], np.int64)
    estimated = np.full(len(rows), np.nan)
    others = np.array([row[2] not in ("", "exact_duplicate") for row in rows], bool)
    if config.minhash.enabled and others.any():
        reader = SignatureReader(work)
        estimated[others] = (reader.rows(docs[others]) == reader.rows(np.array(compared, np.int64)[others])).mean(1)
    return [1.0 if not other else (None if math.isnan(value) else round(float(value), 4))
            for other, value in zip(others.tolist(), estimated.tolist())]


def _decide(members: list[int], info: dict[int, dict], policy: str) -> tuple[list[tuple], list[int]]:
    """(doc, kept, reason, dup_cluster, dup_cluster_size) for each member of one component, and the document each
    is compared with: the one that stays (a URL's newest capture for an older one).

    An older capture of a URL never stays; a component of only such captures is removed under
    `url_duplicate` (the newest capture of each URL stays in its own component)."""
    eligible = [doc for doc in members if info[doc]["winner"] is None]
    size = len(members)
    if not eligible:
        return ([(doc, False, "url_duplicate", info[doc]["winner_id"], size) for doc in members],
                [info[doc]["winner"] for doc in members])
    keeper = min(eligible, key=lambda doc: rank_key(policy, info[doc]["id"], info[doc]["date"] or "",
                                                      info[doc]["length"]))
    keeper_id = info[keeper]["id"]
    decided = []
    for doc in members:
        if doc == keeper:
            decided.append((doc, True, "", keeper_id, size))
        elif info[doc]["text_key"] == info[keeper]["text_key"]:
            decided.append((doc, False, "exact_duplicate", keeper_id, size))
        elif info[doc]["winner"] is not None:
            decided.append((doc, False, "url_duplicate", keeper_id, size))
        else:
            decided.append((doc, False, "near_duplicate", keeper_id, size))
    return decided, [keeper] * len(members)


def write_per_part(rows: pa.Table, parts: list[str], path_of: Callable[[str], str]) -> None:
    """Rows with a `doc` column split by document part, every part getting a file (empty ones too, so the apply
    step knows what to read); one sort, then slices."""
    rows = rows.sort_by("doc")
    bounds = np.searchsorted(part_of(rows.column("doc").to_numpy()), [int(part) for part in parts] + [len(parts)])
    for index, part in enumerate(parts):
        write_table(rows.slice(bounds[index], bounds[index + 1] - bounds[index]), path_of(part))


def _ranked(clusters: list[list[int]], reason: dict[int, str]) -> tuple[list[list[int]], list[list[int]]]:
    """Clusters largest first (keeper first in each), and those of them with a near (not exact) duplicate."""
    by_size = sorted(clusters, key=lambda members: (-len(members), members[0]))
    return by_size, [members for members in by_size if any(reason.get(doc) == "near_duplicate" for doc in members)]


def _candidates(clusters: list[list[int]], reason: dict[int, str]) -> list[list[int]]:
    """The clusters of one bucket that can be examples: the largest, and the largest with a near duplicate."""
    by_size, near = _ranked(clusters, reason)
    return by_size[:EXAMPLE_CLUSTERS] + [members for members in near[:EXAMPLE_CLUSTERS]
                                         if members not in by_size[:EXAMPLE_CLUSTERS]]


def _examples(candidates: list[list[list]], shard_urls: list[str]) -> list[list[dict]]:
    """A few clusters to read: the largest ones and the largest with a near (not exact) duplicate, keeper first."""
    reason = {doc: why for members in candidates for doc, why in members if why}
    by_size, near = _ranked([[doc for doc, _ in members] for members in candidates], reason)
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
    """The example documents' beginnings, read by one call per shard on the cluster (in the flow process this
    was half a second of reading while the workers waited)."""
    docs_array = np.array(docs, np.int64)
    parts = part_of(docs_array)
    found: dict[int, dict] = {}
    for rows in fan_out(_shard_documents, [(shard_urls[part], docs_array[parts == part].tolist())
                                           for part in np.unique(parts).tolist()]):
        found |= rows
    return found


def _shard_documents(job: tuple[str, list[int]]) -> dict[int, dict]:
    shard_url, docs = job
    table = read_documents(shard_url, ["id", "url", "text"]).take(row_of(np.array(docs, np.int64)))
    return {doc: row | {"text": row["text"][:EXAMPLE_CHARS]} for doc, row in zip(docs, table.to_pylist())}
