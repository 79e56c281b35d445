"""Dedup quality and speed per core, side by side: sluice's dedup stage on 1 Dask worker and datatrove 0.10.1's
4-stage MinHash dedup on 1 worker, on the same extraction output of the seeded bench corpus. Two workers over one
is benchmarks/scale.py's.

    .venv/bin/python benchmarks/dedup.py        # ~5 min on 2 cores; needs the peer venv (setup_peer.sh)

Writes benchmarks/results/dedup.json. Everything else lives under benchmarks/_work/ (gitignored).

What runs, each in a fresh process, one at a time:
1. extraction of the bench corpus (`curation_flow` with dedup off; cached in _work/dedup-bench/extract-store).
2. sluice's dedup stage as a Prefect flow on a Dask LocalCluster of 1 worker, fresh store each time,
   in four recipes: `full` (the demo's dedup: exact + URL + MinHash-LSH on word bigrams + repeated paragraphs),
   `minhash` (exact + MinHash on datatrove's 5-grams only, what datatrove does), `substring` (`full` plus
   substring dedup) and `five_grams` (`full` with the 5-gram MinHash it had before). Stage wall = the manifest's
   `wall_seconds` (the stage's work, without the one-time Prefect / Dask start-up, reported apart as
   `call_seconds`).
3. datatrove (benchmarks/peer_dedup_datatrove.py, its own venv) with 1 worker, same 5-gram shingles and
   14 x 8 bands x rows; its wall is the sum of its 4 executor runs (pool start-up included).
Quality is scored against the corpus labels (dev/corpus/dedup_score.py) for every run. Peak memory is the
largest resident set of any single process of the run's tree (psutil, polled every 0.5 s), and of the tree.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dev.corpus.dedup_score import score  # noqa: E402
from benchmarks.harness import (PEER_PYTHON, PYTHON, RESULTS, ROOT, WORK, bench_extraction, bench_recipe,  # noqa: E402
                                ensure_corpus, ensure_peer, log, ratio, run_child, write_result)
from storage.stage_result import stage_folder  # noqa: E402

BENCH_WORK = WORK / "dedup-bench"
GOALS = {"precision": 0.99, "residual_duplicate_share": 0.01, "recall_at_0.85": 0.99, "recall_at_0.75": 0.90, "recall_exact": 1.0,
         "speedup_vs_datatrove_per_core": 3.0}
FIVE_GRAMS = {"ngram": 5, "bands": 14, "rows": 8, "verify_jaccard": 0.7}   # datatrove's shingles and bands
RECIPES = {
    "full": {},                                             # the demo's dedup: word bigrams, 28 x 4, verified at 0.65
    "minhash": {"url": {"enabled": False}, "paragraphs": {"enabled": False}, "minhash": FIVE_GRAMS},
    "substring": {"substring": {"enabled": True}},          # the full recipe plus substring dedup (issue 19)
    "five_grams": {"minhash": FIVE_GRAMS},                  # the full recipe as it was before bigrams (issue 19)
}
RECIPE_FIGURES = ("precision", "recall", "residual_duplicate_share", "removed", "false_positives")
NOT_DEDUP_DECISIONS = ("too_short_after_paragraph_dedup",)  # drops by paragraph removal are not duplicate calls


# ----------------------------------------------------------------------------------------------- the timed child


def stage_child(args) -> int:
    import time

    from prefect import flow

    from flows.dask_cluster import dask_cluster
    from flows.stage_runner import stage_flow
    from tasks.dedup.stage import DedupStage

    recipe = bench_recipe(args.store, [args.corpus], 1, "dedup", {"dedup": json.loads(args.dedup)})
    parent = json.loads(args.parent)

    @flow(name="bench-dedup")
    def bench() -> dict:
        with dask_cluster(recipe.dask):
            return stage_flow(recipe, DedupStage(recipe, parent))

    started = time.perf_counter()
    result = bench()
    print(json.dumps(result | {"call_seconds": round(time.perf_counter() - started, 2)}))
    return 0


# ----------------------------------------------------------------------------------------------- scoring


def record_ids(extract: dict) -> dict[str, str]:
    """Our document id -> WARC-Record-ID, from the extraction shards (the labels are keyed by record id)."""
    from storage.document_shard import read_documents

    ids = {}
    for path in sorted((Path(stage_folder(extract)) / "shards").glob("*.parquet")):
        table = read_documents(str(path), ["id", "warc_record_id"])
        ids |= dict(zip(table.column("id").to_pylist(), table.column("warc_record_id").to_pylist()))
    return ids


def quality(labels: Path, ids: dict[str, str], removed: set[str]) -> dict:
    result = score(str(labels), [(record, doc_id not in removed) for doc_id, record in ids.items()])
    result["false_positive_examples"] = result["false_positive_examples"][:5]
    return result


def ours_removed(stage: dict) -> dict[str, dict]:
    """Removed id -> its row in `removed/` (reason, dup_cluster = the keeper), duplicate decisions only."""
    from storage.parquet import read_table

    removed = {}
    for path in sorted((Path(stage_folder(stage)) / "removed").glob("*.parquet")):
        for row in read_table(str(path)).to_pylist():
            if row["reason"] not in NOT_DEDUP_DECISIONS:
                removed[row["id"]] = row
    return removed


def false_positives_on_text(extract: dict, labels: Path, removed: dict[str, dict]) -> dict:
    """The label-level false positives looked at on the extracted text they were judged on: the exact 5-gram
    Jaccard of each removed text with its keeper's, by label kind and generator variant. A removal the labels
    call wrong whose text is >= 0.7 similar to what was kept is an extraction problem (two pages that came out
    as the same text), not a dedup one."""
    from collections import Counter

    from configs.dedup import MinHashConfig
    from storage.document_shard import read_documents
    from tasks.dedup.minhash import shingle_hashes, token_hashes

    config = MinHashConfig()
    texts, records = {}, {}
    for path in sorted((Path(stage_folder(extract)) / "shards").glob("*.parquet")):
        table = read_documents(str(path), ["id", "text", "lang", "warc_record_id"])
        for row in table.to_pylist():
            texts[row["id"]] = set(shingle_hashes(token_hashes(row["text"], row["lang"] or "", config), 5).tolist())
            records[row["id"]] = row["warc_record_id"]
    label_of = {}
    for line in labels.read_text().splitlines():
        label = json.loads(line)
        label_of[label["record_id"]] = label
    similar, kinds = [], Counter()
    for doc_id, row in removed.items():
        label = label_of.get(records[doc_id], {})
        if label.get("dup_cluster") is not None or row["dup_cluster"] is None:   # a true removal, or a text cut
            continue                                                             # empty (no keeper to compare)
        mine, kept = texts[doc_id], texts[row["dup_cluster"]]
        jaccard = len(mine & kept) / max(1, len(mine | kept))
        similar.append(jaccard)
        kinds[f"{label.get('kind')}/{label.get('variant')} {'>=0.7' if jaccard >= 0.7 else '<0.7'}"] += 1
    return {"false_positives": len(similar), "text_jaccard_at_least_0.7": sum(j >= 0.7 for j in similar),
            "text_jaccard_min": round(min(similar), 3) if similar else None, "by_kind_variant": dict(kinds)}


def precision_on_text(run: dict) -> float:
    """Precision counting a removal the labels call wrong as right when its text is >= 0.7 similar to its
    keeper's: the extractor made the two pages one text, and dedup judged that text correctly."""
    quality = run["quality"]
    return round((quality["true_positives"] + run["false_positives_on_text"]["text_jaccard_at_least_0.7"])
                 / quality["removed"], 4)


def run_ours(name: str, extract: dict, corpus: Path, ids: dict, labels: Path) -> dict:
    store = BENCH_WORK / f"store-{name}"
    shutil.rmtree(store, ignore_errors=True)
    lines, cost = run_child([PYTHON, str(Path(__file__)), "_stage", "--store", str(store), "--corpus", str(corpus),
                               "--dedup", json.dumps(RECIPES[name]), "--parent", json.dumps(extract)],
                              f"sluice dedup {name}")
    stage = lines[-1]
    report = json.loads((Path(stage_folder(stage)) / "report" / "report.json").read_text())
    stats = stage["stats"]
    removed = ours_removed(stage)
    return {"stage_seconds": stats["wall_seconds"], "call_seconds": stage["call_seconds"],
            "steps": report["tables"]["steps"], "documents_in": stats["candidates"],
            "documents_out": stats["documents_out"], "drops": stats["drops"], "notes": stats["notes"],
            "quality": quality(labels, ids, set(removed)),
            "false_positives_on_text": false_positives_on_text(extract, labels, removed)} | cost


def run_peer(extract: dict, ids: dict, labels: Path) -> dict:
    work = BENCH_WORK / "datatrove"
    shutil.rmtree(work, ignore_errors=True)
    shards = Path(stage_folder(extract)) / "shards"
    lines, cost = run_child([PEER_PYTHON, str(ROOT / "benchmarks" / "peer_dedup_datatrove.py"), str(shards),
                               "--work", str(work), "--workers", "1"], "datatrove dedup")
    peer = lines[-1]
    return {"seconds": peer["seconds"], "peak_rss_mb_self_reported": peer["peak_rss_mb"],
            "documents_in": peer["documents_in"], "removed": len(peer["removed_ids"]),
            "quality": quality(labels, ids, set(peer["removed_ids"]))} | cost


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="child")
    child = sub.add_parser("_stage")
    child.add_argument("--store", required=True)
    child.add_argument("--corpus", required=True)
    child.add_argument("--dedup", default="{}")
    child.add_argument("--parent", default="{}")
    parser.add_argument("--corpus", type=Path, help="corpus folder with warc/ and labels.jsonl (default: bench)")
    parser.add_argument("--out", type=Path, default=RESULTS / "dedup.json")
    args = parser.parse_args(argv)
    if args.child == "_stage":
        return stage_child(args)

    corpus, corpus_origin = ensure_corpus(args.corpus)
    ensure_peer()
    labels = corpus / "labels.jsonl"
    extract, extract_cost = bench_extraction(corpus)
    ids = record_ids(extract)
    runs = {"datatrove": run_peer(extract, ids, labels)}
    for name in RECIPES:
        runs[f"sluice_{name}"] = run_ours(name, extract, corpus / "warc", ids, labels)

    ours, peer = runs["sluice_full"], runs["datatrove"]
    headline = ours["quality"]
    result = {
        "corpus": corpus_origin,
        "documents_in": ours["documents_in"],
        "precision": headline["precision"],
        "precision_on_extracted_text": precision_on_text(ours),
        "residual_duplicate_share": headline["residual_duplicate_share"],
        "recall_exact": headline["recall_exact"],
        "recall_by_jaccard": headline["recall_by_jaccard"],
        "pairs_by_jaccard": headline["counts_by_jaccard"],
        "peer_precision": peer["quality"]["precision"],
        "peer_recall_exact": peer["quality"]["recall_exact"],
        "peer_recall_by_jaccard": peer["quality"]["recall_by_jaccard"],
        # per core: each side on one worker process; sluice's stage wall vs datatrove's four executor runs
        "speedup_vs_datatrove_per_core": ratio(peer["seconds"]["total"], ours["stage_seconds"]),
        "speedup_vs_datatrove_per_core_same_work": ratio(peer["seconds"]["total"],
                                                         runs["sluice_minhash"]["stage_seconds"]),
        "peak_rss_mb": ours["peak_process_rss_mb"],
        "peer_peak_rss_mb": peer["peak_process_rss_mb"],
        "by_recipe": {name: {key: runs[f"sluice_{name}"]["quality"][key] for key in RECIPE_FIGURES}
                      | {"precision_on_extracted_text": precision_on_text(runs[f"sluice_{name}"]),
                         "stage_seconds": runs[f"sluice_{name}"]["stage_seconds"]} for name in RECIPES},
        "goals": GOALS,
        "runs": runs,
        "extraction": {"manifest": extract["manifest"], "cost": extract_cost},
    }
    write_result(args.out, result, "dedup.py", argv)
    log(json.dumps({key: value for key, value in result.items() if key not in ("runs", "extraction")},
                   indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
