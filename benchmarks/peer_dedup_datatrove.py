"""The peer for near-duplicate removal: datatrove's 4-stage MinHash dedup over our Parquet document shards.

Run it with the peer venv (`bash benchmarks/setup_peer.sh` makes it), never the project venv:

    benchmarks/_work/venv-peer/bin/python benchmarks/peer_dedup_datatrove.py SHARD_DIR --work DIR --workers 2 \
        [--ngram 5 --bands 14 --rows 8]

The stock datatrove MinHash recipe (examples/minhash_deduplication.py), each stage one LocalPipelineExecutor run:

1. signatures  ParquetReader(SHARD_DIR, text_key="text", id_key="id", glob_pattern="*.parquet")
               -> MinhashDedupSignature                      tasks = shards, workers = min(N, shards)
2. buckets     MinhashDedupBuckets                           tasks = bands,  workers = min(N, bands)
3. cluster     MinhashDedupCluster                           tasks = 1,      workers = 1
4. filter      ParquetReader -> MinhashDedupFilter(exclusion_writer=JsonlWriter(removed/))
               -> JsonlWriter(kept/)                         tasks = shards, workers = min(N, shards)

MinhashConfig(n_grams=--ngram, num_buckets=--bands, hashes_per_bucket=--rows), datatrove's defaults otherwise
(seed 1, 64-bit xxhash, its text normalisation). Stage 1's word tokenizer for English is spaCy's blank "en"
tokenizer, so the peer venv needs `spacy` (no model download: spacy.blank needs none).

How datatrove decides (worth knowing when reading the scores): every LSH band collision is a duplicate edge (no
Jaccard check); stage 3 unions the edges and keeps each cluster's union-find root. For a pair that is the earlier
document in (shard, row) order; in larger clusters the root of the first union seen wins and then the bigger set
absorbs the smaller, so the kept copy is not necessarily the first, nor the original.

Prints one JSON line on stdout (logs go to stderr):
    kept_ids, removed_ids      our `id` column, read back from the JSONL files stage 4 wrote
    seconds                    wall seconds of each stage's executor.run() (pool start-up included) and the total
    peak_rss_mb                RUSAGE_SELF.ru_maxrss + RUSAGE_CHILDREN.ru_maxrss, in MB, taken after the runs and
                               after stopping the forkserver (whose pool workers are its children, not ours, so
                               their usage reaches us only once it has exited). RUSAGE_CHILDREN is the largest
                               single descendant, not a sum: with N concurrent workers the true peak of the tree can
                               be up to about self + N x that. `rss_mb` gives the two parts.
    documents_in               rows in the input shards
    documents_without_signature  texts with fewer than --ngram words after datatrove's tokenizer: no signature,
                               so never compared and always kept
    workers, ngram, bands, rows
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import pyarrow.parquet as pq  # noqa: E402
from datatrove.executor.local import LocalPipelineExecutor  # noqa: E402
from datatrove.pipeline.dedup.minhash import (  # noqa: E402
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.readers import ParquetReader  # noqa: E402
from datatrove.pipeline.writers import JsonlWriter  # noqa: E402

# Sub-folders of --work this script owns (and clears first: stale signature, .dups or .remove files from an
# earlier run with other settings would silently change the result).
OUTPUTS = ("signatures", "buckets", "remove_ids", "kept", "removed", "logs")


def _reader(shards: Path) -> ParquetReader:
    return ParquetReader(str(shards), text_key="text", id_key="id", glob_pattern="*.parquet")


def minhash_stages(reader, shards: int, work: Path, config: MinhashConfig) -> list[tuple[str, list, int]]:
    """The 4 stages as (name, pipeline, tasks) over the documents `reader()` reads from `shards` files."""
    return [
        ("signatures", [reader(), MinhashDedupSignature(output_folder=str(work / "signatures"), config=config)],
         shards),
        ("buckets", [MinhashDedupBuckets(input_folder=str(work / "signatures"), output_folder=str(work / "buckets"),
                                         config=config)], config.num_buckets),
        ("cluster", [MinhashDedupCluster(input_folder=str(work / "buckets"), output_folder=str(work / "remove_ids"),
                                         config=config)], 1),
        ("filter", [reader(),
                    MinhashDedupFilter(input_folder=str(work / "remove_ids"),
                                       exclusion_writer=JsonlWriter(str(work / "removed"))),
                    JsonlWriter(str(work / "kept"))], shards),
    ]


def run_stages(stages: list[tuple[str, list, int]], workers: int, logs: Path) -> dict[str, float]:
    """Each stage one LocalPipelineExecutor run (workers never above its tasks: extra pool processes would only
    add start-up); the wall seconds of each and their total."""
    seconds = {}
    for name, pipeline, tasks in stages:
        executor = LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=min(workers, tasks),
                                         logging_dir=str(logs / name), skip_completed=False)
        started = time.perf_counter()
        executor.run()
        seconds[name] = round(time.perf_counter() - started, 3)
    seconds["total"] = round(sum(seconds.values()), 3)
    return seconds


def _ids(folder: Path) -> list[str]:
    """The `id` of every document JsonlWriter wrote under folder (gzip JSONL, one file per rank)."""
    ids = []
    for path in sorted(folder.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            ids.extend(json.loads(line)["id"] for line in handle)
    return ids


def _signed_documents(signatures: Path, config: MinhashConfig) -> int:
    """Documents stage 1 wrote a signature for: records in bucket 0's files (one per signed document)."""
    record = config.hashes_per_bucket * (8 if config.hash_config.precision == 64 else 4) + 4  # hashes + doc index
    return sum(path.stat().st_size for path in (signatures / "bucket_000").glob("*.minhash.sig")) // record


def _stop_forkserver() -> None:
    """Stop multiprocess's forkserver (started by the first pool) so that its children's rusage reaches ours."""
    from multiprocess import forkserver

    if getattr(forkserver._forkserver, "_forkserver_pid", None):
        forkserver._forkserver._stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("shards", type=Path, help="folder of our Parquet document shards (*.parquet)")
    parser.add_argument("--work", type=Path, required=True, help="datatrove's intermediate files, outputs and logs")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--ngram", type=int, default=5)
    parser.add_argument("--bands", type=int, default=14)
    parser.add_argument("--rows", type=int, default=8)
    args = parser.parse_args(argv)

    shards = args.shards.resolve()
    files = sorted(shards.glob("*.parquet"))
    if not files:
        print(f"no *.parquet under {shards}", file=sys.stderr)
        return 2
    work = args.work.resolve()
    for name in OUTPUTS:
        shutil.rmtree(work / name, ignore_errors=True)
    documents_in = sum(pq.ParquetFile(path).metadata.num_rows for path in files)

    config = MinhashConfig(n_grams=args.ngram, num_buckets=args.bands, hashes_per_bucket=args.rows)
    seconds = run_stages(minhash_stages(lambda: _reader(shards), len(files), work, config), args.workers,
                         work / "logs")

    _stop_forkserver()
    # ru_maxrss is in KiB on Linux.
    rss = {"self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "children_max": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}

    kept, removed = _ids(work / "kept"), _ids(work / "removed")
    if len(kept) + len(removed) != documents_in:
        # datatrove's readers skip documents with an empty text: they are neither kept nor removed.
        print(f"warning: {documents_in} documents in, {len(kept)} kept + {len(removed)} removed", file=sys.stderr)
    result = {
        "tool": "datatrove 0.10.1",
        "kept_ids": kept,
        "removed_ids": removed,
        "seconds": seconds,
        "peak_rss_mb": round(rss["self"] + rss["children_max"], 1),
        "rss_mb": {key: round(value, 1) for key, value in rss.items()},
        "documents_in": documents_in,
        "documents_without_signature": documents_in - _signed_documents(work / "signatures", config),
        "workers": args.workers,
        "ngram": args.ngram,
        "bands": args.bands,
        "rows": args.rows,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
