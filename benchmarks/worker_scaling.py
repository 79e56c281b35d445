"""Two Dask workers over one, stage by stage, and what the services' share of the cores costs that figure.

    .venv/bin/python benchmarks/worker_scaling.py [--pairs 3] [--pinned 0,1] [--no-kenlm]
    .venv/bin/python benchmarks/worker_scaling.py --from-runs RUNS.jsonl --out FILE [--measured-by TEXT]

One 2-worker run of the data stages (scale.py's child: configs/demo.yaml on the bench corpus, no training) fills a
store. Then the stages after extraction run again `--pairs` times on 2 workers and on 1, alternately, their
outputs deleted (extraction is a cache hit). Per stage: the median walls and their ratio, and the ratio of the
calls' own seconds, 2 workers over 1: above 1 when the calls run slower beside each other.

With `--pinned CPUS` every pair also runs confined to those CPUs (taskset), alternating with the unconfined runs.
On a machine with more cores, `--pinned 0,1` set against the unconfined runs shows what 2 workers lose when the
flow process (Dask scheduler and client), the Prefect API and MLflow share their 2 cores. `--no-kenlm` is for a
machine without lmplz. Each run's figures go to _work/worker-scaling-runs.jsonl as they come.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (BENCH_CORPUS, RESULTS, WORK, generated_corpus, now, ratio, run_child,  # noqa: E402
                                write_result)

SCALE_CHILD = str(Path(__file__).with_name("scale.py"))
STORE = WORK / "worker-scaling-store"
RUNS = WORK / "worker-scaling-runs.jsonl"
UNCONFINED = "all cores"


def run(workers: int, variant: str, no_kenlm: bool, fresh: bool) -> dict:
    """One run of the data stages; `fresh` from an empty store, else the stages after extraction again."""
    if fresh:
        shutil.rmtree(STORE, ignore_errors=True)
    for stage in (path for path in STORE.glob("*") if path.name != "extract"):
        shutil.rmtree(stage)
    command = [sys.executable, SCALE_CHILD, "_run", "--workers", str(workers), "--store", str(STORE),
               *(["--no-kenlm"] if no_kenlm else []), str(generated_corpus(BENCH_CORPUS, "bench", 0)[0] / "warc")]
    if variant != UNCONFINED:
        command = ["taskset", "-c", variant.removeprefix("cpus "), *command]
    lines, cost = run_child(command, f"worker scaling, {variant}, {workers} worker(s)")
    record = {"variant": variant, "workers": workers, "fresh": fresh, "no_kenlm": no_kenlm,
              "total": cost["process_seconds"], "stages": lines[-1]}
    with RUNS.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    return record


def summary(runs: list[dict]) -> dict:
    """Per variant and stage, over the reruns (the fresh run fills the store and is left out)."""
    out, pairs = {}, {}
    for variant in dict.fromkeys(run["variant"] for run in runs):
        sides = {workers: [run["stages"] for run in runs if run["variant"] == variant and run["workers"] == workers
                           and not run["fresh"]] for workers in (1, 2)}
        if not (sides[1] and sides[2]):
            continue
        out[variant] = {stage: {
            "wall_seconds_2w": [side[stage]["wall_seconds"] for side in sides[2]],
            "wall_seconds_1w": [side[stage]["wall_seconds"] for side in sides[1]],
            "scaling_2w_over_1w": ratio(median(sides[1], stage, "wall_seconds"),
                                        median(sides[2], stage, "wall_seconds")),
            "call_seconds_2w_over_1w": ratio(median(sides[2], stage, "call_seconds"),
                                             median(sides[1], stage, "call_seconds"))}
            for stage in sides[2][0] if stage != "extract"}
        pairs[variant] = len(sides[1])
    return {"variants": out, "pairs": pairs}


def median(sides: list[dict], stage: str, key: str) -> float:
    return statistics.median(side[stage][key] for side in sides)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=3, help="reruns on each worker count, per variant")
    parser.add_argument("--pinned", help="CPUs (taskset's list) for a second, confined run of each pair")
    parser.add_argument("--no-kenlm", action="store_true", help="the recipe without KenLM (a machine without lmplz)")
    parser.add_argument("--from-runs", type=Path, help="summarize the runs recorded in this file, measuring nothing")
    parser.add_argument("--measured-by", help="with --from-runs: where, when and how those runs were measured")
    parser.add_argument("--out", type=Path, default=RESULTS / "worker_scaling.json")
    args = parser.parse_args(argv)
    if args.from_runs:
        runs = [json.loads(line) for line in args.from_runs.read_text().splitlines() if line.strip()]
    else:
        RUNS.unlink(missing_ok=True)
        variants = [UNCONFINED, *([f"cpus {args.pinned}"] if args.pinned else [])]
        runs = [run(2, UNCONFINED, args.no_kenlm, fresh=True)]
        for _ in range(args.pairs):       # alternately, so a slow spell of the machine hits every side
            runs += [run(workers, variant, args.no_kenlm, fresh=False) for variant in variants for workers in (2, 1)]
    write_result(args.out, summary(runs) | {"no_kenlm": all(run["no_kenlm"] for run in runs), "summarized": now(),
                                            "runs": runs}, "worker_scaling.py", argv,
                 machine={"measured_by": args.measured_by} if args.from_runs else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
