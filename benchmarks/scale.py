"""Does each data stage's cost grow linearly with the corpus, its memory stay flat, and what do 2 workers give over 1?
The one scaling benchmark: every 2-workers-over-1 figure, ours per stage and datatrove's extraction, is here.

    .venv/bin/python benchmarks/scale.py [--sizes 1,4,16] [--workers 2] [--pairs 3] [--pinned CPUS] [--no-kenlm]
                                         [--no-peer]
    .venv/bin/python benchmarks/scale.py --resummarize   # the summary of the recorded runs again

Size n is n bench corpora with distinct seeds (`sluice corpus --size bench --seed 0..n-1`, each built once
under benchmarks/_work/). Each copy has the generator's own exact and near duplicates (about 12% of its pages),
and copies of different seeds share the real Common Crawl pages and draw their articles from the same source
texts, so dedup has more work across copies too (at 2x it removed 29% of the documents, at 1x 12%). Each size runs the data stages of configs/demo.yaml (extract, dedup,
quality, tokenizer, tokenize, mixture; no training) in a fresh process with a fresh store, on `--workers`
Dask workers, and once more at the smallest size on 1 worker for the scaling figure. With `--pairs n` the smallest
size runs n times on each worker count, alternately, and the scaling figure compares the median walls per stage:
the same work on this 2-core machine varies by 15-30% from run to run. Per stage it gives the ratio of the median
walls, 1 worker over 2, and of the calls' own seconds, 2 workers over 1 (above 1 when the calls run slower beside
each other).

With `--pinned CPUS` (for a lent machine with more cores) every pair also runs confined to those CPUs (taskset),
after the unconfined runs: `--pinned 0,1` set against the unconfined runs shows what 2 workers lose when the flow
process (Dask scheduler and client), the Prefect API and MLflow share their 2 cores. `--no-kenlm`: the recipe
without KenLM (a machine without lmplz). Unless `--no-peer`, datatrove's extraction (benchmarks/peer_datatrove.py, at
its default, on 2 of the bench corpus's files: throughput.py's peer side) runs `--pairs` times on 2 workers and on 1,
alternately, for its own 2-over-1.

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

from benchmarks.harness import (BENCH_CORPUS, PYTHON, RESULTS, WORK, bench_recipe, command_line,  # noqa: E402
                                ensure_peer, generated_corpus, goal, input_files, linked_folder, now,
                                peer_extraction, peer_files, ratio, run_child, write_result)

STAGES = ("extract", "dedup", "quality_scores", "quality_filter", "tokenize", "mixture")
# the stages whose work is spread over the workers, shard by shard: the 2-workers-over-1 goal is theirs (the mixture
# is a fraction of a second of work; the tokenizer, one call on the threads of one worker, is not among STAGES)
SCALING_STAGES = ("extract", "dedup", "quality_scores", "quality_filter", "tokenize")
PEER_FILES = 2      # datatrove's extraction is several times slower per document: 2 files, as throughput.py's
GOALS = {"docs_per_s_ratio_min": 0.85, "worker_rss_ratio_max": 1.5, "orchestration_share_max": 0.10,
         "scaling_2w_over_1w_min": 1.8}


def corpus(seed: int) -> Path:
    """The bench corpus of one seed (seed 0 is the bench corpus the other benchmarks use)."""
    return generated_corpus(BENCH_CORPUS if seed == 0 else WORK / f"corpus-bench-s{seed}", "bench", seed)[0]


def run_child_flow(args) -> int:
    """(In a child.) The data stages over the given corpora; prints each stage's figures."""
    from flows.curation import curation_flow
    from storage.stage_figures import FIGURES_KEY

    overrides = {"train": {"enabled": False}} | ({"quality": {"kenlm": {"enabled": False}}} if args.no_kenlm else {})
    recipe = bench_recipe(args.store, args.inputs, args.workers, "scale", overrides)
    stages = curation_flow(recipe)["stages"]
    print(json.dumps({name: {key: stage["stats"].get(key) for key in (
        "candidates", "documents_out", "wall_seconds", "seconds", "call_seconds", "longest_call_seconds", "task_slots",
        "orchestration_share", "overhead_share")} | {
        # what the stage's steps wrote to its work/ folder (dedup's shuffles, the mixture's references): among the
        # figures of the stages that have one
        "work_bytes": stage["stats"].get(FIGURES_KEY, {}).get("work_bytes", 0),
        "work_files": stage["stats"].get(FIGURES_KEY, {}).get("work_files", 0)}
        for name, stage in stages.items()}))
    return 0


def measure(size: int, workers: int, no_kenlm: bool, cpus: str | None = None) -> dict:
    """One run of the data stages over `size` bench corpora on `workers` workers, confined to `cpus` if given."""
    store = WORK / "scale-store"
    shutil.rmtree(store, ignore_errors=True)
    inputs = [str(corpus(seed) / "warc") for seed in range(size)]
    command = [PYTHON, __file__, "_run", "--workers", str(workers), "--store", str(store),
               *(["--no-kenlm"] if no_kenlm else []), *inputs]
    lines, cost = run_child(["taskset", "-c", cpus, *command] if cpus else command,
                            f"scale {size}x, {workers} worker(s){f', cpus {cpus}' if cpus else ''}",
                            timeout=6 * 3600)
    shutil.rmtree(store, ignore_errors=True)
    stages = lines[-1]
    for stage in stages.values():
        wall, slots = stage["wall_seconds"], stage["task_slots"] or workers
        stage["docs_per_s_per_thread"] = round(stage["candidates"] / wall / slots, 2) if wall else None
        stage["work_bytes_per_document"] = round(stage["work_bytes"] / stage["candidates"], 1) \
            if stage["candidates"] and stage["work_bytes"] else None
    return {"size": size, "workers": workers, "cpus": cpus, "stages": stages, "cost": cost}


def measure_all(sizes: list[int], workers: int, pairs: int, pinned: str | None, no_kenlm: bool) -> list[dict]:
    """Each size on `workers` workers, then the scaling pairs at the smallest size, 1 worker after `workers`,
    alternately (so a slow spell of the machine hits both sides); the first pair's side on `workers` is the smallest
    size's run. With `pinned`, each pair runs once more confined to those CPUs."""
    runs = [measure(size, workers, no_kenlm) for size in sizes]
    for repeat in range(pairs):
        for cpus in (None, *([pinned] if pinned else [])):
            sides = (1,) if repeat == 0 and cpus is None else (workers, 1)
            runs += [measure(sizes[0], count, no_kenlm, cpus) | ({"repeat": repeat} if repeat else {})
                     for count in sides]
    return runs


def measure_peer(pairs: int, workers: int) -> dict:
    """datatrove's extraction on `workers` workers and on 1, alternately, `pairs` times: its 2-over-1."""
    ensure_peer()
    files = peer_files(input_files(corpus(0) / "warc"), PEER_FILES)
    folder = linked_folder(files)
    runs = [peer_extraction(folder, count, f"scale-w{count}-pair{pair}") | {"workers": count}
            for pair in range(pairs) for count in (workers, 1)]
    walls = {count: [run["wall_seconds"] for run in runs if run["workers"] == count] for count in (workers, 1)}
    return {"files": [path.name for path in files],
            "scaling_2w_over_1w": ratio(statistics.median(walls[1]), statistics.median(walls[workers])),
            "scaling_2w_over_1w_per_pair": [ratio(one, many) for many, one in zip(walls[workers], walls[1])],
            "runs": runs}


def summary(runs: list[dict], workers: int) -> dict:
    sized = sized_runs(runs, workers)
    small, large = sized[0], sized[-1]
    out = {
        "sizes": [run["size"] for run in sized],
        # the keys compare 16x with 1x; null until a 16x run is recorded (the measured pair is below)
        "min_docs_per_s_ratio_16x_over_1x": None, "max_worker_rss_ratio_16x_over_1x": None,
        # the smallest size's rate is its median over every run of it on `workers` (the scaling pairs repeat it):
        # one run of a 10 s stage varies by 15-30%; the first runs alone are kept beside it
        f"min_docs_per_s_ratio_{large['size']}x_over_{small['size']}x": min_rate_ratio(
            large, pair_side(runs, small["size"], workers, None)),
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
    out |= scaling(pair_side(runs, small["size"], 1, None), pair_side(runs, small["size"], workers, None))
    out["min_scaling_2w_over_1w"] = min(out["scaling_2w_over_1w"][name] for name in SCALING_STAGES)
    pinned = next((run["cpus"] for run in runs if run.get("cpus")), None)
    if pinned:
        out["pinned"] = {"cpus": pinned} | scaling(pair_side(runs, small["size"], 1, pinned),
                                                   pair_side(runs, small["size"], workers, pinned))
    out["goals"] = goals(out, f"{large['size']}x_over_{small['size']}x", workers)
    return out


def goals(out: dict, sizes: str, workers: int) -> dict:
    """The goals as the summary `out` meets them; `sizes`: the key's suffix, `16x_over_1x`."""
    large, small = sizes.split("_over_")
    return {
        f"docs/s per thread at {large} within 15% of {small}": goal(
            out[f"min_docs_per_s_ratio_{sizes}"], ">=", GOALS["docs_per_s_ratio_min"]),
        f"largest worker RSS at {large} within 1.5x of {small}": goal(
            out[f"max_worker_rss_ratio_{sizes}"], "<=", GOALS["worker_rss_ratio_max"]),
        "orchestration under 10% of each stage's wall": goal(out["max_orchestration_share"], "<=",
                                                              GOALS["orchestration_share_max"]),
        f"{workers} workers >= 1.8x 1, each of {', '.join(SCALING_STAGES)}": goal(
            out["min_scaling_2w_over_1w"], ">=", GOALS["scaling_2w_over_1w_min"])}


def scaling(singles: list[dict], paired: list[dict]) -> dict:
    """Per stage, the median wall on 1 worker over that on 2 and the calls' median seconds on 2 over 1; and each pair
    alone, the i-th run on 2 workers against the i-th on one: how far the figure moves from run to run."""
    return {"scaling_2w_over_1w": {name: ratio(median_of(singles, name, "wall_seconds"),
                                               median_of(paired, name, "wall_seconds")) for name in STAGES},
            "call_seconds_2w_over_1w": {name: ratio(median_of(paired, name, "call_seconds"),
                                                    median_of(singles, name, "call_seconds")) for name in STAGES},
            "scaling_2w_over_1w_per_pair": {name: [ratio(one["stages"][name]["wall_seconds"],
                                                         two["stages"][name]["wall_seconds"])
                                                   for two, one in zip(paired, singles)] for name in STAGES},
            "scaling_pairs": len(singles)}


def pair_side(runs: list[dict], size: int, workers: int, cpus: str | None) -> list[dict]:
    """The runs of one size on `workers` workers, confined to `cpus` (None: unconfined), in the order they ran."""
    return [run for run in runs if run["size"] == size and run["workers"] == workers and run.get("cpus") == cpus]


def sized_runs(runs: list[dict], workers: int) -> list[dict]:
    """The unconfined runs on `workers` workers, one per size (the smallest size's repeats left out), smallest
    first."""
    return sorted((run for run in runs if run["workers"] == workers and not run.get("repeat") and not run.get("cpus")),
                  key=lambda run: run["size"])


def min_rate_ratio(large: dict, smalls: list[dict]) -> float | None:
    """The lowest over stages of the large run's documents/s per thread over the small runs' median."""
    return min((value for value in (ratio(large["stages"][name]["docs_per_s_per_thread"], statistics.median(
        run["stages"][name]["docs_per_s_per_thread"] for run in smalls)) for name in STAGES)
        if value is not None), default=None)


def max_share(runs: list[dict], key: str) -> float | None:
    return max((stage[key] for run in runs for stage in run["stages"].values() if stage.get(key) is not None),
               default=None)


def median_of(runs: list[dict], stage: str, key: str) -> float:
    return statistics.median(run["stages"][stage][key] for run in runs)


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
    parser.add_argument("--pinned", help="CPUs (taskset's list) for a second, confined run of each pair")
    parser.add_argument("--no-kenlm", action="store_true", help="the recipe without KenLM (a machine without lmplz)")
    parser.add_argument("--no-peer", action="store_true", help="leave datatrove's 2-over-1 out (no peer venv)")
    parser.add_argument("--out", type=Path, default=RESULTS / "scale.json")
    parser.add_argument("--resummarize", action="store_true",
                        help="recompute the summary keys and the plot of the runs --out records, measuring nothing")
    args = parser.parse_args(argv)
    if args.child == "_run":
        return run_child_flow(args)
    if args.resummarize:
        return resummarize(args.out)

    sizes = sorted(int(size) for size in args.sizes.split(","))
    runs = measure_all(sizes, args.workers, args.pairs, args.pinned, args.no_kenlm)
    peer = {} if args.no_peer else {"peer_extraction": measure_peer(args.pairs, args.workers)}
    plot(runs, args.workers, args.out.with_suffix(".png"))
    write_result(args.out, summary(runs, args.workers) | peer | {
        "workers": args.workers, "no_kenlm": args.no_kenlm, "runs": runs,
        "plot": str(args.out.with_suffix(".png").name)}, "scale.py", argv)
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
