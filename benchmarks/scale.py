"""Does each data stage's cost grow linearly with the corpus, and its memory stay flat?

    .venv/bin/python benchmarks/scale.py [--sizes 1,4,16] [--workers 2] [--pairs 3]
    .venv/bin/python benchmarks/scale.py --resummarize   # the summary of the recorded runs again

Size n is n bench corpora with distinct seeds (`sluice corpus --size bench --seed 0..n-1`, each built once
under benchmarks/_work/). Each copy has the generator's own exact and near duplicates (about 12% of its pages),
and copies of different seeds share the real Common Crawl pages and draw their articles from the same source
texts, so dedup has more work across copies too (at 2x it removed 29% of the documents, at 1x 12%). Each size runs the data stages of configs/demo.yaml (extract, dedup,
quality, tokenizer, tokenize, mixture; no training) in a fresh process with a fresh store, on `--workers`
Dask workers, and once more at the smallest size on 1 worker for the scaling figure. With `--pairs n` the smallest
size runs n times on each worker count, alternately, and the scaling figure compares the median walls per stage:
the same work on this 2-core machine varies by 15-30% from run to run.

Per stage: wall and task seconds, documents per second per worker thread, and the orchestration share the
stage recorded ((wall - task seconds / threads) / wall) with the overhead beyond its longest call, and the bytes and files
its steps shuffled through its work/ folder. Per run: the peak RSS of the largest process that is
not the flow process (a Dask worker) and of the flow process. Writes results/scale.json and results/scale.png.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (BENCH_CORPUS, PYTHON, RESULTS, WORK, bench_recipe,  # noqa: E402
                                command_line, generated_corpus, now, ratio, run_child, write_result)

STAGES = ("extract", "dedup", "quality_scores", "quality_filter", "tokenize", "mixture")
SCALING_STAGES = ("extract", "dedup", "quality_scores", "tokenize")     # the 2-workers-over-1 stages


def corpus(seed: int) -> Path:
    """The bench corpus of one seed (seed 0 is the bench corpus the other benchmarks use)."""
    return generated_corpus(BENCH_CORPUS if seed == 0 else WORK / f"corpus-bench-s{seed}", "bench", seed)[0]


def run_child_flow(args) -> int:
    """(In a child.) The data stages over the given corpora; prints each stage's figures."""
    from flows.curation import curation_flow

    overrides = {"train": {"enabled": False}} | ({"quality": {"kenlm": {"enabled": False}}} if args.no_kenlm else {})
    recipe = bench_recipe(args.store, args.inputs, args.workers, "scale", overrides)
    stages = curation_flow(recipe)["stages"]
    print(json.dumps({name: {key: stage["stats"].get(key) for key in (
        "candidates", "documents_out", "wall_seconds", "seconds", "call_seconds", "longest_call_seconds", "task_slots",
        "orchestration_share", "overhead_share")} | {
        # what the stage's steps wrote to its work/ folder (dedup's shuffles, the mixture's references)
        "work_bytes": stage["stats"]["notes"].get("work_bytes", 0),
        "work_files": stage["stats"]["notes"].get("work_files", 0)}
        for name, stage in stages.items()}))
    return 0


def measure(size: int, workers: int) -> dict:
    store = WORK / "scale-store"
    shutil.rmtree(store, ignore_errors=True)
    inputs = [str(corpus(seed) / "warc") for seed in range(size)]
    lines, cost = run_child([PYTHON, __file__, "_run", "--workers", str(workers), "--store", str(store), *inputs],
                            f"scale {size}x, {workers} worker(s)", timeout=6 * 3600)
    shutil.rmtree(store, ignore_errors=True)
    stages = lines[-1]
    for stage in stages.values():
        wall, slots = stage["wall_seconds"], stage["task_slots"] or workers
        stage["docs_per_s_per_thread"] = round(stage["candidates"] / wall / slots, 2) if wall else None
        stage["work_bytes_per_document"] = round(stage["work_bytes"] / stage["candidates"], 1) \
            if stage["candidates"] and stage["work_bytes"] else None
    return {"size": size, "workers": workers, "stages": stages, "cost": cost}


def summary(runs: list[dict], workers: int) -> dict:
    sized = sized_runs(runs, workers)
    small, large = sized[0], sized[-1]
    singles = [run for run in runs if run["workers"] == 1]
    out = {
        "sizes": [run["size"] for run in sized],
        # the keys compare 16x with 1x; null until a 16x run is recorded (the measured pair is below)
        "min_docs_per_s_ratio_16x_over_1x": None, "max_worker_rss_ratio_16x_over_1x": None,
        # the smallest size's rate is its median over every run of it on `workers` (the scaling pairs repeat it):
        # one run of a 10 s stage varies by 15-30%; the first runs alone are kept beside it
        f"min_docs_per_s_ratio_{large['size']}x_over_{small['size']}x": min_rate_ratio(
            large, [run for run in runs if run["workers"] == workers and run["size"] == small["size"]]),
        f"min_docs_per_s_ratio_{large['size']}x_over_{small['size']}x_first_runs": min_rate_ratio(large, [small]),
        f"max_worker_rss_ratio_{large['size']}x_over_{small['size']}x": ratio(
            large["cost"]["peak_descendant_rss_mb"], small["cost"]["peak_descendant_rss_mb"]),
        f"flow_process_rss_ratio_{large['size']}x_over_{small['size']}x": ratio(
            large["cost"]["peak_root_rss_mb"], small["cost"]["peak_root_rss_mb"]),
        # the shuffles grow with the corpus, not faster: bytes through work/ per document, large over small
        f"max_work_bytes_per_document_ratio_{large['size']}x_over_{small['size']}x": max(
            (value for value in (ratio(large["stages"][name].get("work_bytes_per_document"),
                                       small["stages"][name].get("work_bytes_per_document")) for name in STAGES)
             if value is not None), default=None),
        "max_orchestration_share": max_share(sized, "orchestration_share"),
        # the same less the longest call, which more workers do not shorten (a stage of one training call)
        "max_overhead_share": max_share(sized, "overhead_share"),
    }
    if singles:
        size = singles[0]["size"]
        paired = [run for run in runs if run["workers"] == workers and run["size"] == size]
        out["scaling_2w_over_1w"] = {name: ratio(median_wall(singles, name), median_wall(paired, name))
                                     for name in SCALING_STAGES}
        # each pair alone, the i-th run on 2 workers against the i-th on one (the repeats run back to back): how far
        # the figure moves from run to run
        out["scaling_2w_over_1w_per_pair"] = {name: [ratio(one["stages"][name]["wall_seconds"],
                                                           two["stages"][name]["wall_seconds"])
                                                     for two, one in zip(paired, singles)] for name in SCALING_STAGES}
        out["min_scaling_2w_over_1w"] = min(out["scaling_2w_over_1w"].values())
        out["scaling_pairs"] = len(singles)
    return out


def sized_runs(runs: list[dict], workers: int) -> list[dict]:
    """The runs on `workers` workers, one per size (the smallest size's repeats left out), smallest first."""
    return sorted((run for run in runs if run["workers"] == workers and not run.get("repeat")),
                  key=lambda run: run["size"])


def min_rate_ratio(large: dict, smalls: list[dict]) -> float | None:
    """The lowest over stages of the large run's documents/s per thread over the small runs' median."""
    return min((value for value in (ratio(large["stages"][name]["docs_per_s_per_thread"], statistics.median(
        run["stages"][name]["docs_per_s_per_thread"] for run in smalls)) for name in STAGES)
        if value is not None), default=None)


def max_share(runs: list[dict], key: str) -> float | None:
    return max((stage[key] for run in runs for stage in run["stages"].values() if stage.get(key) is not None),
               default=None)


def median_wall(runs: list[dict], stage: str) -> float:
    return statistics.median(run["stages"][stage]["wall_seconds"] for run in runs)


def plot(runs: list[dict], workers: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sized = sized_runs(runs, workers)
    sizes = [run["size"] for run in sized]
    figure, (rate, memory) = plt.subplots(1, 2, figsize=(11, 4))
    for name in STAGES:
        rate.plot(sizes, [run["stages"][name]["docs_per_s_per_thread"] for run in sized], marker="o", label=name)
    rate.set(xlabel="corpus size (x bench)", ylabel="documents / s per worker thread", xscale="log", yscale="log")
    rate.legend(fontsize=8)
    memory.plot(sizes, [run["cost"]["peak_descendant_rss_mb"] for run in sized], marker="o", label="largest worker")
    memory.plot(sizes, [run["cost"]["peak_root_rss_mb"] for run in sized], marker="o", label="flow process")
    memory.set(xlabel="corpus size (x bench)", ylabel="peak RSS, MB", xscale="log")
    memory.legend(fontsize=8)
    figure.suptitle(f"sluice data stages on {workers} Dask workers")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="child")
    child = sub.add_parser("_run")
    child.add_argument("inputs", nargs="+")
    child.add_argument("--workers", type=int, required=True)
    child.add_argument("--store", required=True)
    child.add_argument("--no-kenlm", action="store_true", help="the recipe without KenLM (a machine without lmplz)")
    parser.add_argument("--sizes", default="1,4,16", help="corpus sizes in bench corpora (default 1,4,16)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=1, help="runs of the smallest size on each worker count")
    parser.add_argument("--out", type=Path, default=RESULTS / "scale.json")
    parser.add_argument("--resummarize", action="store_true",
                        help="recompute the summary keys and the plot of the runs --out records, measuring nothing")
    args = parser.parse_args(argv)
    if args.child == "_run":
        return run_child_flow(args)
    if args.resummarize:
        return resummarize(args.out)

    sizes = sorted(int(size) for size in args.sizes.split(","))
    runs = [measure(size, args.workers) for size in sizes] + [measure(sizes[0], 1)]
    for repeat in range(1, args.pairs):       # alternately, so a slow spell of the machine hits both sides
        runs += [measure(sizes[0], workers) | {"repeat": repeat} for workers in (args.workers, 1)]
    plot(runs, args.workers, args.out.with_suffix(".png"))
    write_result(args.out, summary(runs, args.workers) | {"workers": args.workers, "runs": runs,
                                                          "plot": str(args.out.with_suffix(".png").name)},
                 "scale.py", argv)
    return 0


def resummarize(path: Path) -> int:
    """The summary of recorded runs again, after a change to how it is computed; the command and date stay those
    of the measurement."""
    recorded = json.loads(path.read_text())
    runs, workers = recorded["runs"], recorded["workers"]
    plot(runs, workers, path.with_suffix(".png"))
    recorded.update(summary(runs, workers))
    recorded["summarized"] = f"{command_line('scale.py', ['--resummarize'])} at {now()}"
    path.write_text(json.dumps(recorded, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
