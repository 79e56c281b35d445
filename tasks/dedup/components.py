"""Connected components of the duplicate graph by hash bucket, so that no process holds the graph: min-label
propagation. A document's component is named by the smallest document number connected to it.

Each function below does one bucket. The edges step calls `scatter_edges` for its bucket once the bucket's edges
are written (so the adjacency shuffle costs no pass of its own); `component_members` runs the rest through
`fan_out` (as plain Dask tasks when called inside a Prefect task on Dask, in a loop otherwise), one call per worker
thread and pass. Files under `<work>/components/`:

- `adjacency/b<v>/e<e>.parquet`: every edge of edge bucket `e`, both ways, split by the bucket of its source
  (a URL loser and its winner are there as edges to themselves, so that they are documents of the graph);
  `losers/b<v>/e<e>.parquet`: the URL losers, split by their own bucket.
- `labels/r<round>/b<v>.parquet`: (doc, label) of the documents of bucket `v` after a round;
  `messages/r<round>/b<v>/b<from>.parquet`: the smallest label offered in that round to each document of `v`.
- `members/b<l>/b<v>.parquet`: the documents of bucket `v`, with their keys, split by the bucket of their label.

Round 0 labels every document with itself and offers that to its neighbours; each later round takes the smallest
offer and offers a label that went down. A round in which no label changes ends it, after (longest shortest path
in any component) + 1 rounds. Memory per call is one bucket of edges, labels or members.
"""
from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage.parquet import read_table, write_table
from tasks.dedup.exact import URL_LOSER_SCHEMA
from tasks.dedup.features import KEY_SCHEMA
from tasks.dedup.groups import runs
from tasks.dedup.shuffle import read_bucket, write_buckets
from tasks.fan_out import fan_out, per_thread

ADJACENCY_SCHEMA = pa.schema([("doc", pa.int64()), ("neighbour", pa.int64())])
LABEL_SCHEMA = pa.schema([("doc", pa.int64()), ("label", pa.int64())])
MEMBER_SCHEMA = pa.schema([*LABEL_SCHEMA, *(field for field in KEY_SCHEMA if field.name != "doc"),
                           *(field for field in URL_LOSER_SCHEMA if field.name != "doc")])


def bucket_names(prefix: str, buckets: int) -> list[str]:
    return [f"{prefix}{bucket:05d}" for bucket in range(buckets)]


def scatter_edges(work: str, buckets: int, bucket: int) -> None:
    """Edge bucket `bucket` (exact and verified near-duplicate edges, URL losers) -> the adjacency shuffle."""
    edges = pa.concat_tables([read_table(f"{work}/edges/{kind}/b{bucket:05d}.parquet") for kind in ("exact", "lsh")])
    losers = read_table(f"{work}/url_losers/b{bucket:05d}.parquet")
    a, b = edges.column("a").to_numpy(), edges.column("b").to_numpy()
    docs = np.concatenate([losers.column("doc").to_numpy(), losers.column("winner").to_numpy()])
    adjacency = pa.table({"doc": np.concatenate([a, b, docs]), "neighbour": np.concatenate([b, a, docs])},
                         schema=ADJACENCY_SCHEMA)
    write_buckets(adjacency, "doc", buckets, f"{work}/components/adjacency", f"e{bucket:05d}")
    write_buckets(losers, "doc", buckets, f"{work}/components/losers", f"e{bucket:05d}")


def propagate(work: str, buckets: int, round_: int, bucket: int) -> int:
    """One round for the documents of `bucket`; returns how many labels went down (round 0: the documents)."""
    root = f"{work}/components"
    adjacency = read_bucket(f"{root}/adjacency", bucket, bucket_names("e", buckets), ADJACENCY_SCHEMA)
    source, neighbour = adjacency.column("doc").to_numpy(), adjacency.column("neighbour").to_numpy()
    if round_ == 0:
        docs = np.unique(source)
        labels = docs.copy()
        changed = np.ones(docs.size, dtype=bool)
    else:
        before = labels_after(work, round_ - 1, bucket)
        docs, previous = before.column("doc").to_numpy(), before.column("label").to_numpy()
        offers = read_bucket(f"{root}/messages/r{round_ - 1:05d}", bucket, bucket_names("b", buckets), LABEL_SCHEMA)
        labels = previous.copy()
        np.minimum.at(labels, np.searchsorted(docs, offers.column("doc").to_numpy()),
                      offers.column("label").to_numpy())
        changed = labels < previous
    write_table(pa.table({"doc": docs, "label": labels}, schema=LABEL_SCHEMA), _labels_path(work, round_, bucket))
    position = np.searchsorted(docs, source)
    sends = changed[position] & (source != neighbour)
    write_buckets(_smallest_offers(neighbour[sends], labels[position][sends]), "doc", buckets,
                  f"{root}/messages/r{round_:05d}", f"b{bucket:05d}")
    return int(changed.sum())


def _smallest_offers(docs: np.ndarray, labels: np.ndarray) -> pa.Table:
    """One row per document: the smallest label offered to it."""
    sorted_labels, starts, _ = runs(docs, labels)
    return pa.table({"doc": np.unique(docs), "label": sorted_labels[starts]}, schema=LABEL_SCHEMA)


def gather_members(work: str, parts: list[str], buckets: int, last_round: int, bucket: int) -> None:
    """The documents of `bucket` with their final label, their keys and, for a URL loser, its winner -> the
    members shuffle, split by the bucket of the label (so a component is whole in one bucket)."""
    root = f"{work}/components"
    labels = labels_after(work, last_round, bucket)
    keys = read_bucket(f"{work}/docs", bucket, parts, KEY_SCHEMA)
    keys = keys.filter(pc.is_in(keys.column("doc"), value_set=labels.column("doc")))
    losers = read_bucket(f"{root}/losers", bucket, bucket_names("e", buckets), URL_LOSER_SCHEMA)
    members = labels.join(keys, "doc").join(losers, "doc", join_type="left outer")
    write_buckets(members.select(MEMBER_SCHEMA.names).cast(MEMBER_SCHEMA), "label", buckets,
                  f"{root}/members", f"b{bucket:05d}")


def label_components(work: str, buckets: int) -> int:
    """Propagate labels over the scattered edges (`scatter_edges`, every edge bucket) until none changes; returns
    the last round (its labels are final)."""
    round_ = 0
    while sum(fan_out(functools.partial(propagate, work, buckets, round_), range(buckets), per_thread(buckets))):
        round_ += 1
    return round_


def component_members(work: str, parts: list[str], buckets: int) -> int:
    """Label the components, then shuffle their documents by label: afterwards bucket `l` of the members shuffle
    holds every document of the components whose label falls in `l`. Returns the rounds it took."""
    last_round = label_components(work, buckets)
    fan_out(functools.partial(gather_members, work, parts, buckets, last_round), range(buckets), per_thread(buckets))
    return last_round + 1


def labels_after(work: str, round_: int, bucket: int) -> pa.Table:
    return read_table(_labels_path(work, round_, bucket))


def _labels_path(work: str, round_: int, bucket: int) -> str:
    return f"{work}/components/labels/r{round_:05d}/b{bucket:05d}.parquet"


def read_members(work: str, buckets: int, bucket: int) -> pa.Table:
    return read_bucket(f"{work}/components/members", bucket, bucket_names("b", buckets), MEMBER_SCHEMA)
