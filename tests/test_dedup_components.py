"""Connected components by bucket (min-label propagation) give scipy's components on hand-made graphs."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from storage.parquet import write_table
from tasks.dedup.components import label_components, labels_after, scatter_edges
from tasks.dedup.exact import URL_LOSER_SCHEMA
from tasks.dedup.features import DOC_BITS
from tasks.dedup.groups import EDGE_SCHEMA


def doc(part: int, row: int) -> int:
    return (part << DOC_BITS) + row


def chain(docs: list[int]) -> list[tuple[int, int]]:
    return list(zip(docs[:-1], docs[1:]))


def write_edges(work: str, edges: list[tuple[int, int]], losers: list[tuple[int, int]], buckets: int,
                seed: int = 0) -> None:
    """The edges step's files, each edge in a random edge bucket and of a random kind (exact or verified LSH)."""
    rng = np.random.default_rng(seed)
    placed = rng.integers(0, buckets, len(edges))
    kinds = rng.integers(0, 2, len(edges))
    loser_buckets = rng.integers(0, buckets, len(losers))
    for bucket in range(buckets):
        for kind_index, kind in enumerate(("exact", "lsh")):
            chosen = [edge for edge, at, k in zip(edges, placed, kinds) if at == bucket and k == kind_index]
            write_table(pa.table({"a": [a for a, _ in chosen], "b": [b for _, b in chosen]}, schema=EDGE_SCHEMA),
                        f"{work}/edges/{kind}/b{bucket:05d}.parquet")
        mine = [pair for pair, at in zip(losers, loser_buckets) if at == bucket]
        write_table(pa.table({"doc": [d for d, _ in mine], "winner": [w for _, w in mine],
                              "winner_id": [f"id-{w}" for _, w in mine]}, schema=URL_LOSER_SCHEMA),
                    f"{work}/url_losers/b{bucket:05d}.parquet")


def expected_labels(edges: list[tuple[int, int]], losers: list[tuple[int, int]]) -> dict[int, int]:
    """scipy's components, each named by its smallest document."""
    involved = np.unique(np.array([d for pair in edges + losers for d in pair], np.int64))
    left = np.searchsorted(involved, [a for a, _ in edges])
    right = np.searchsorted(involved, [b for _, b in edges])
    graph = coo_matrix((np.ones(len(edges)), (left, right)), shape=(involved.size, involved.size))
    _, component = connected_components(graph, directed=False)
    smallest = {c: involved[component == c].min() for c in np.unique(component)}
    return {int(d): int(smallest[c]) for d, c in zip(involved, component)}


def propagated_labels(work: str, buckets: int) -> tuple[dict[int, int], int]:
    for bucket in range(buckets):      # as the edges step does for each bucket it writes
        scatter_edges(work, buckets, bucket)
    last = label_components(work, buckets)
    tables = [labels_after(work, last, bucket) for bucket in range(buckets)]
    labels = {d: label for table in tables for d, label in zip(table.column("doc").to_pylist(),
                                                                table.column("label").to_pylist())}
    return labels, last + 1


def random_graph(seed: int, documents: int, edges: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    docs = [doc(int(p), int(r)) for p, r in zip(rng.integers(0, 40, documents), rng.integers(0, 5000, documents))]
    pairs = rng.integers(0, len(docs), (edges, 2))
    return [(docs[a], docs[b]) for a, b in pairs.tolist() if docs[a] != docs[b]]


GRAPHS = {
    # a path whose smallest document sits in the middle, so the label travels both ways
    "chain": (chain([doc(3, 9)] + [doc(part, 7) for part in range(12, 0, -1)] + [doc(0, 1)]
                    + [doc(part, 2) for part in range(5, 25)]), []),
    "star": ([(doc(9, 9), doc(part, part)) for part in range(30)], []),
    "cycle": (chain([doc(part, 1) for part in range(15)]) + [(doc(14, 1), doc(0, 1))], []),
    "two cliques and a bridge": ([(doc(1, a), doc(1, b)) for a in range(6) for b in range(a)]
                                 + [(doc(2, a), doc(2, b)) for a in range(6) for b in range(a)]
                                 + [(doc(1, 5), doc(2, 0))], []),
    "URL losers only": ([], [(doc(4, 1), doc(7, 2)), (doc(4, 3), doc(7, 2))]),
    "URL losers and edges": (chain([doc(2, r) for r in range(10)]), [(doc(2, 5), doc(8, 8)), (doc(9, 1), doc(9, 0))]),
    "many components": (random_graph(1, 600, 450), []),
    "one giant component": (random_graph(2, 300, 900), []),
    "no edges": ([], []),
}


CASES = [(name, buckets) for name in GRAPHS for buckets in (1, 3)] + [("many components", 8)]


@pytest.mark.parametrize(("name", "buckets"), CASES)
def test_propagated_components_equal_scipy(tmp_path, name, buckets):
    edges, losers = GRAPHS[name]
    write_edges(str(tmp_path), edges, losers, buckets)
    labels, rounds = propagated_labels(str(tmp_path), buckets)
    assert labels == expected_labels(edges, losers)
    if name == "chain":   # the label of the middle document needs 20 hops to reach the far end, then one quiet round
        assert rounds >= 21


def test_labels_do_not_depend_on_how_edges_are_placed(tmp_path):
    edges, losers = random_graph(3, 200, 150), []
    first, second = tmp_path / "first", tmp_path / "second"
    write_edges(str(first), edges, losers, 5, seed=1)
    write_edges(str(second), [(b, a) for a, b in reversed(edges)], losers, 5, seed=2)
    assert propagated_labels(str(first), 5)[0] == propagated_labels(str(second), 5)[0]
