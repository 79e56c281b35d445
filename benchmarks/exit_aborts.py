"""Processes that end as they meant to: each scenario run `--runs` times as its own process, counting the runs that
died of SIGABRT ("terminate called without an active exception": a native thread still joinable when the
interpreter tore down) or ended with another status than the one they meant.

    .venv/bin/python benchmarks/exit_aborts.py [--runs 50] [--scenarios dedup failed-training]

- `dedup`: the in-process dedup (`tasks.dedup.steps.dedup_steps`) on two shards of real prose; means 0.
- `failed-training`: the trainer under torchrun (2 CPU ranks) whose loss diverges (lr 1e4), so it stops with
  NonFiniteLoss; means 1.
Writes `results/exit_aborts.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import RESULTS, ROOT, log, write_result  # noqa: E402
from storage.locations import shared_data_dir  # noqa: E402

DEDUP = """
import sys
from configs.dedup import DedupConfig
from storage.document_shard import DOCUMENT_SCHEMA, write_documents
from tasks.dedup.steps import dedup_steps

out, books = sys.argv[1], sys.argv[2:]
urls = []
for index, book in enumerate(books):
    paragraphs = [p for p in open(book, encoding="utf-8").read().split("\\n\\n") if len(p.split()) > 20][:200]
    rows = [{"id": f"{index}-{n}", "url": f"https://example.org/{index}/{n}", "text": text, "lang": "en",
             "lang_score": 0.9, "source": "bench", "warc_path": "bench.warc.gz", "warc_record_id": f"<urn:{index}-{n}>",
             "warc_offset": 0, "warc_date": "2024-01-01T00:00:00Z", "charset": "utf-8"}
            for n, text in enumerate(paragraphs + paragraphs[:20])]
    url = f"{out}/input/shard-{index}.parquet"
    write_documents({name: [row[name] for row in rows] for name in DOCUMENT_SCHEMA.names}, url)
    urls.append(url)
dedup_steps(urls, f"{out}/out", DedupConfig())
"""


def dedup_command(work: Path) -> tuple[list[str], int]:
    books = sorted((shared_data_dir() / "reference" / "gutenberg_nltk").glob("*.txt"))[:2]
    return [sys.executable, "-c", DEDUP, str(work), *map(str, books)], 0


def failed_training_command(work: Path) -> tuple[list[str], int]:
    from flows.torchrun import torchrun_command
    from storage.token_shard import TokenShardWriter

    shards = []
    for index, book in enumerate(sorted((shared_data_dir() / "reference" / "gutenberg_nltk").glob("*.txt"))[:2]):
        writer = TokenShardWriter(work / f"bytes-{index}", vocab_size=512)
        writer.add_document(list(book.read_bytes()[:200_000]))
        writer.close()
        shards.append(str(work / f"bytes-{index}"))
    config = {"name": "diverging", "model": {"preset": "tiny"}, "micro_batch_size": 4, "steps": 40,
              "data": {"train": shards, "seed": 0}, "optimizer": {"lr": 1e4, "warmup_steps": 0, "grad_clip": None},
              "checkpoint": {"dir": str(work / "checkpoints"), "every": 1000}, "mlflow": {"enabled": False},
              "hardware": {"device": "cpu", "dtype": "fp32", "data_parallel": 2}}
    (work / "train.yaml").write_text(yaml.safe_dump(config))
    return torchrun_command(str(work / "train.yaml"), 2), 1


SCENARIOS = {"dedup": dedup_command, "failed-training": failed_training_command}


def run_scenario(name: str, runs: int) -> dict:
    statuses, aborts = {}, 0
    for attempt in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            command, meant = SCENARIOS[name](Path(folder))
            env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
            done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        aborted = done.returncode == -6 or "terminate called" in done.stderr or "SIGABRT" in done.stderr
        aborts += aborted
        statuses[done.returncode] = statuses.get(done.returncode, 0) + 1
        if aborted or done.returncode != meant:
            log(f"{name} run {attempt + 1}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    log(f"{name}: {runs} runs, {aborts} aborted, exit statuses {statuses}")
    return {"runs": runs, "meant": meant, "aborted": aborts, "exit_statuses": statuses,
            "ended_as_meant": statuses.get(meant, 0)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--out", type=Path, default=RESULTS / "exit_aborts.json")
    args = parser.parse_args(argv)
    result = {name: run_scenario(name, args.runs) for name in args.scenarios}
    write_result(args.out, result, "exit_aborts.py", argv)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
