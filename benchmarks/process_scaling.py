"""What two processes on this machine give over one, with no Prefect and no Dask: the ceiling for a stage's
"2 workers over 1" (issue 17 asks 1.8x of extract, dedup, quality scores and tokenize).

    .venv/bin/python benchmarks/process_scaling.py      # ~4 min on 2 cores

Each workload is the calls a stage sends its workers, over the 16 document shards of the bench corpus's cached
extraction: dedup's per-shard features (`tasks.dedup.features.compute_features`: MinHash signatures, LSH band
keys and the bucket files) and tokenize's per-shard encoding (`tasks.tokenize.encode.tokenize_shard`, with a
SentencePiece model of the demo's size trained here once). A pure-Python loop with no memory traffic is the
control. Every workload runs its calls in a pool of one process, then in a pool of two (both started and warmed
beforehand, calls handed out one at a time, largest shard first, as the stages do), three times each; the figures
are the medians. Per-call seconds are measured inside the call, so `call_seconds_2_over_1` says how much slower the same
call runs while another process runs beside it: two processes can give at most 2 / that.

Writes results/process_scaling.json.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (RESULTS, WORK, bench_env, bench_extraction, ensure_corpus, log, ratio,  # noqa: E402
                                write_result)
from storage.stage_result import stage_folder  # noqa: E402

SCRATCH = WORK / "process-scaling"
LOOP_ITERATIONS = 3_000_000


def timed(call, argument) -> float:
    started = time.perf_counter()
    call(argument)
    return time.perf_counter() - started


def dedup_features(job: tuple[str, int]) -> None:
    from configs.dedup import DedupConfig
    from tasks.dedup.features import compute_features

    shard_url, part = job
    work = tempfile.mkdtemp(dir=SCRATCH)
    compute_features(shard_url, part, work, DedupConfig())
    shutil.rmtree(work)


def tokenize(job: tuple[str, int]) -> None:
    from tasks.tokenize.encode import TokenizeJob, tokenize_shard

    shard_url, part = job
    work = tempfile.mkdtemp(dir=SCRATCH)
    tokenize_shard(TokenizeJob(shard_url, os.path.join(work, f"part-{part}"), str(SCRATCH / "tokenizer.model")))
    shutil.rmtree(work)


def python_loop(job: tuple[str, int]) -> None:
    total = 0
    for number in range(LOOP_ITERATIONS):
        total += number * number


WORKLOADS = {"dedup_features": dedup_features, "tokenize": tokenize, "python_loop": python_loop}


def _call(arguments: tuple[str, tuple[str, int]]) -> float:
    name, job = arguments
    return timed(WORKLOADS[name], job)


def _warm(_: int) -> None:
    import configs.dedup  # noqa: F401
    import tasks.dedup.features  # noqa: F401
    import tasks.tokenize.encode  # noqa: F401


def run(name: str, jobs: list[tuple[str, int]], pool) -> dict:
    """Wall and summed call seconds of the jobs in the pool."""
    started = time.perf_counter()
    seconds = list(pool.imap_unordered(_call, [(name, job) for job in jobs], chunksize=1))
    return {"wall": time.perf_counter() - started, "calls": sum(seconds)}


def train_tokenizer(shards: list[str]) -> None:
    import sentencepiece as spm

    from storage.document_shard import read_documents

    texts = [text for shard in shards[:4] for text in read_documents(shard, ["text"]).column("text").to_pylist()]
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_prefix=str(SCRATCH / "tokenizer"),
                                   vocab_size=4000, model_type="bpe", num_threads=2, minloglevel=2)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "process_scaling.json")
    args = parser.parse_args(argv)
    os.environ.update(bench_env())
    corpus, origin = ensure_corpus()
    extraction, _ = bench_extraction(corpus)
    shards = sorted((str(path) for path in (Path(stage_folder(extraction)) / "shards").glob("*.parquet")),
                    key=lambda path: -os.path.getsize(path))      # largest first, as the stages submit them
    jobs = [(shard, part) for part, shard in enumerate(shards)]
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    train_tokenizer(shards)

    figures = {}
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as alone, context.Pool(2) as pair:
        alone.map(_warm, range(1))
        pair.map(_warm, range(2))
        for name in WORKLOADS:
            ones, twos = [], []
            for _ in range(args.repeat):
                ones.append(run(name, jobs, alone))
                twos.append(run(name, jobs, pair))
            one = {key: statistics.median(run_[key] for run_ in ones) for key in ("wall", "calls")}
            two = {key: statistics.median(run_[key] for run_ in twos) for key in ("wall", "calls")}
            figures[name] = {"calls": len(jobs), "wall_seconds_1": round(one["wall"], 3),
                             "wall_seconds_2": round(two["wall"], 3), "call_seconds_1": round(one["calls"], 3),
                             "call_seconds_2": round(two["calls"], 3),
                             "scaling_2_over_1": ratio(one["wall"], two["wall"]),
                             "call_seconds_2_over_1": ratio(two["calls"], one["calls"])}
            log(f"{name}: {figures[name]}")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    write_result(args.out, {"corpus": origin, "input": "the bench corpus's extracted document shards",
                            "repeat": args.repeat, "workloads": figures}, "process_scaling.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
