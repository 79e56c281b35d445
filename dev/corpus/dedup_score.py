"""How well a near-duplicate remover did on a generated corpus, scored against its labels.jsonl.

`score(labels_path, documents)` takes the dedup input as (warc_record_id, kept) pairs, whichever tool produced
them (sluice's dedup stage, or datatrove through benchmarks/peer_dedup_datatrove.py). Pure Python, no third-party import.

Definitions
- Universe: the documents given (the dedup input). They join to the labels by `record_id` == warc_record_id.
  Documents without a label are ignored for recall and count as non-duplicates for precision.
- precision = removed documents that really duplicate a kept one / removed documents (None when nothing was
  removed). A removed document is a true positive when its label's `dup_cluster` is not null and at least one
  other document of the same `dup_cluster` in the universe is kept. So removing every copy of a cluster is a false
  positive for each of them (nothing of it survives), and removing a copy instead of the original is fine. Real
  records with identical texts share a "real-NNNNN" cluster, so removing one of those is a true positive too.
- recall: over the pairs (copy, original) where the copy's kind is `exact_dup` or `near_dup` and the original
  (the document of kind `original` with the same `dup_cluster`) is also in the universe. A pair is detected unless
  both the copy and the original are kept. `recall_exact` is over exact_dup copies; `recall_by_jaccard` over
  near_dup copies bucketed by their `measured_jaccard` against the original:
      "0.95" = [0.95, 1], "0.85" = [0.85, 0.95), "0.75" = [0.75, 0.85), "0.6" = [0.6, 0.75), "below_0.6" = < 0.6
  (a near_dup without measured_jaccard counts in `recall` only). Each value is the recall, None when the bucket
  holds no pair; `counts_by_jaccard` gives the number of pairs per bucket, `recall` the figure over all pairs.
- residual_duplicate_share = surplus copies kept / documents kept: for every `dup_cluster`, the documents of it
  kept beyond the first. 0 when no duplicate survives next to another copy of itself.

Manual use:
    .venv/bin/python -m dev.corpus.dedup_score --labels CORPUS/labels.jsonl KEPT.json
where KEPT.json is [[record_id, kept], ...]; prints the score as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable

# (name, lower bound) from the highest; a value belongs to the first bucket whose bound it reaches.
JACCARD_BUCKETS = (("0.95", 0.95), ("0.85", 0.85), ("0.75", 0.75), ("0.6", 0.6), ("below_0.6", float("-inf")))
COPY_KINDS = ("exact_dup", "near_dup")
MAX_EXAMPLES = 10


def jaccard_bucket(value: float) -> str:
    return next(name for name, bound in JACCARD_BUCKETS if value >= bound)


def load_labels(path: str) -> dict[str, dict]:
    """labels.jsonl as {record_id: label}."""
    with open(path, encoding="utf-8") as handle:
        return {label["record_id"]: label for label in map(json.loads, filter(str.strip, handle))}


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def score(labels_path: str, documents: Iterable[tuple[str, bool]]) -> dict:
    labels = load_labels(labels_path)
    documents = [(record_id, bool(kept)) for record_id, kept in documents]
    kept_of = dict(documents)

    # Kept documents per dup_cluster, to know whether a removed one still has a surviving copy.
    kept_in_cluster: Counter[str] = Counter()
    for record_id, kept in documents:
        cluster = labels.get(record_id, {}).get("dup_cluster")
        if kept and cluster:
            kept_in_cluster[cluster] += 1

    residual = sum(count - 1 for count in kept_in_cluster.values())
    removed = true_positives = 0
    false_positive_examples = []
    for record_id, kept in documents:
        if kept:
            continue
        removed += 1
        label = labels.get(record_id, {})
        if label.get("dup_cluster") and kept_in_cluster[label["dup_cluster"]] > 0:
            true_positives += 1
        elif len(false_positive_examples) < MAX_EXAMPLES:
            false_positive_examples.append({"record_id": record_id, "kind": label.get("kind"),
                                            "dup_cluster": label.get("dup_cluster")})

    # The original of each cluster present in the universe.
    original_of = {labels[record_id]["dup_cluster"]: record_id for record_id in kept_of
                   if record_id in labels and labels[record_id]["kind"] == "original"}
    pairs: dict[str, list[int]] = {"all": [0, 0], "exact": [0, 0]}  # [pairs, detected]
    by_jaccard = {name: [0, 0] for name, _ in JACCARD_BUCKETS}
    for record_id, kept in kept_of.items():
        label = labels.get(record_id)
        if label is None or label["kind"] not in COPY_KINDS or label["dup_cluster"] not in original_of:
            continue
        detected = not (kept and kept_of[original_of[label["dup_cluster"]]])
        tallies = [pairs["all"]]
        if label["kind"] == "exact_dup":
            tallies.append(pairs["exact"])
        elif label.get("measured_jaccard") is not None:
            tallies.append(by_jaccard[jaccard_bucket(label["measured_jaccard"])])
        for tally in tallies:
            tally[0] += 1
            tally[1] += detected

    return {
        "documents": len(documents),
        "removed": removed,
        "true_positives": true_positives,
        "false_positives": removed - true_positives,
        "precision": _ratio(true_positives, removed),
        "pairs": pairs["all"][0],
        "recall": _ratio(pairs["all"][1], pairs["all"][0]),
        "pairs_exact": pairs["exact"][0],
        "recall_exact": _ratio(pairs["exact"][1], pairs["exact"][0]),
        "recall_by_jaccard": {name: _ratio(detected, count) for name, (count, detected) in by_jaccard.items()},
        "counts_by_jaccard": {name: count for name, (count, _) in by_jaccard.items()},
        "residual_duplicate_share": _ratio(residual, len(documents) - removed),
        "false_positive_examples": false_positive_examples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", required=True, help="labels.jsonl of the generated corpus")
    parser.add_argument("documents", help="JSON file: [[warc_record_id, kept], ...] for every dedup input document")
    args = parser.parse_args(argv)
    with open(args.documents, encoding="utf-8") as handle:
        documents = [(record_id, kept) for record_id, kept in json.load(handle)]
    print(json.dumps(score(args.labels, documents), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
