"""dev/corpus/dedup_score: a dedup run scored against the generated corpus's labels, on hand-made labels."""
from __future__ import annotations

import json

import pytest

from dev.corpus import dedup_score


def _label(record_id, kind, cluster=None, jaccard=None):
    return {"record_id": record_id, "kind": kind, "dup_cluster": cluster, "measured_jaccard": jaccard}


LABELS = [
    _label("o1", "original", "dup-1"),
    _label("e1", "exact_dup", "dup-1", 1.0),
    _label("n1", "near_dup", "dup-1", 0.97),  # bucket 0.95
    _label("o2", "original", "dup-2"),
    _label("n2", "near_dup", "dup-2", 0.80),  # bucket 0.75
    _label("n3", "near_dup", "dup-2", 0.55),  # bucket below_0.6
    _label("o3", "original", "dup-3"),
    _label("n4", "near_dup", "dup-3", 0.90),  # its original is not in the universe below
    _label("r1", "real_cc", "real-1"),
    _label("r2", "real_cc", "real-1"),
    _label("u1", "original"),
    _label("s1", "spam"),
]


@pytest.fixture()
def labels_path(tmp_path) -> str:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(label) + "\n" for label in LABELS))
    return str(path)


def test_precision_recall_and_buckets(labels_path):
    documents = [
        ("o1", True), ("e1", False), ("n1", False),  # both copies detected, original kept
        ("o2", False), ("n2", True),                  # original removed, copy kept: detected, and a true positive
        ("n3", True),                                 # kept, but its original o2 was removed: detected
        ("n4", True),                                 # no original in the universe: not a pair
        ("r1", True), ("r2", False),                  # identical real records: a true positive, not a pair
        ("u1", False),                                # false positive: not a duplicate of anything
        ("unlabelled", False),                        # no label: a false positive, ignored for recall
        ("s1", True),
    ]
    result = dedup_score.score(labels_path, documents)
    assert result["documents"] == 12
    assert result["removed"] == 6
    assert result["true_positives"] == 4  # e1, n1, o2, r2
    assert result["false_positives"] == 2
    assert result["precision"] == pytest.approx(4 / 6)
    assert result["false_positive_examples"] == [
        {"record_id": "u1", "kind": "original", "dup_cluster": None},
        {"record_id": "unlabelled", "kind": None, "dup_cluster": None},
    ]
    assert result["pairs"] == 4 and result["recall"] == 1.0
    assert result["pairs_exact"] == 1 and result["recall_exact"] == 1.0
    assert result["counts_by_jaccard"] == {"0.95": 1, "0.85": 0, "0.75": 1, "0.6": 0, "below_0.6": 1}
    assert result["recall_by_jaccard"] == {"0.95": 1.0, "0.85": None, "0.75": 1.0, "0.6": None, "below_0.6": 1.0}


def test_undetected_pairs_and_cluster_removed_whole(labels_path):
    documents = [
        ("o1", True), ("e1", True), ("n1", False),  # e1 kept beside its original: an undetected exact pair
        ("o2", True), ("n2", True), ("n3", False),  # n2 undetected, n3 detected
        ("r1", False), ("r2", False),               # every copy of real-1 removed: two false positives
    ]
    result = dedup_score.score(labels_path, documents)
    assert result["removed"] == 4
    assert result["true_positives"] == 2  # n1, n3
    assert [example["record_id"] for example in result["false_positive_examples"]] == ["r1", "r2"]
    assert result["recall_exact"] == 0.0
    assert result["recall"] == pytest.approx(2 / 4)
    assert result["recall_by_jaccard"]["0.95"] == 1.0
    assert result["recall_by_jaccard"]["0.75"] == 0.0
    assert result["recall_by_jaccard"]["below_0.6"] == 1.0


def test_nothing_removed_and_bucket_bounds(labels_path):
    result = dedup_score.score(labels_path, [("o1", True), ("u1", True)])
    assert result["removed"] == 0 and result["precision"] is None
    assert result["pairs"] == 0 and result["recall"] is None and result["recall_exact"] is None
    bucket = dedup_score.jaccard_bucket
    assert [bucket(v) for v in (1.0, 0.95, 0.9499, 0.85, 0.75, 0.6, 0.5999, 0.0)] == \
        ["0.95", "0.95", "0.85", "0.85", "0.75", "0.6", "below_0.6", "below_0.6"]


def test_main_reads_a_json_file(labels_path, tmp_path, capsys):
    kept = tmp_path / "kept.json"
    kept.write_text(json.dumps([["o1", True], ["e1", False]]))
    assert dedup_score.main(["--labels", labels_path, str(kept)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["true_positives"] == 1 and printed["recall_exact"] == 1.0
