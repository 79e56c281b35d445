"""The peer side of benchmarks/whole_run.py, run in the peer venv: datatrove 0.10.1's whole curation of a folder of
.warc.gz files, as its own examples chain it, in two parts.

    benchmarks/_work/venv-peer/bin/python benchmarks/peer_whole_datatrove.py DIR --work DIR --workers 2

1. documents  WarcReader -> Trafilatura() -> LanguageFilter (the shared lid.176.ftz, threshold 0.3: sluice's
              default min_score) -> GopherRepetitionFilter -> GopherQualityFilter -> C4QualityFilter ->
              FineWebQualityFilter -> JsonlWriter, at their defaults; one task per file (a task that raises on a
              truncated record is recorded and the others go on: benchmarks/peer_datatrove.py)
2. minhash    its 4-stage MinHash dedup over part 1's JSONL (benchmarks/peer_dedup_datatrove.py's stages)

Prints one JSON line: each part's wall seconds (executor.run(), pool start-up included; the MinHash stages one by
one), the documents read, written by part 1 and kept by part 2, and the tasks that failed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from datatrove.pipeline.dedup.minhash import MinhashConfig  # noqa: E402
from datatrove.pipeline.extractors import Trafilatura  # noqa: E402
from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,  # noqa: E402
                                        GopherRepetitionFilter)
from datatrove.pipeline.readers import JsonlReader, WarcReader  # noqa: E402
from datatrove.pipeline.writers import JsonlWriter  # noqa: E402
from peer_datatrove import DEFAULT_LID, LocalLanguageFilter, TolerantLocalExecutor, _stat  # noqa: E402
from peer_dedup_datatrove import _ids, minhash_stages, run_stages  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", type=Path, help="folder searched recursively for *.warc.gz")
    parser.add_argument("--work", type=Path, required=True, help="datatrove's outputs and logs (cleared first)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lid-model", default=DEFAULT_LID)
    args = parser.parse_args(argv)

    folder, work = args.input.resolve(), args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    files = sorted(str(path.relative_to(folder)) for path in folder.rglob("*.warc.gz"))
    (work / "paths.txt").write_text("".join(f"{name}\n" for name in files))
    documents = work / "documents"
    executor = TolerantLocalExecutor(pipeline=[
        WarcReader(str(folder), paths_file=str(work / "paths.txt")),
        Trafilatura(),
        LocalLanguageFilter(args.lid_model, language_threshold=0.3),
        GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(), FineWebQualityFilter(),
        JsonlWriter(str(documents)),
    ], tasks=len(files), workers=args.workers, logging_dir=str(work / "logs" / "documents"), skip_completed=False)
    started = time.perf_counter()
    stats = executor.run()
    documents_s = round(time.perf_counter() - started, 3)
    failed = sorted(marker.name for marker in (work / "logs" / "documents" / "failed").glob("*"))

    written = sorted(documents.glob("*.jsonl.gz"))
    config = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8)
    minhash = run_stages(minhash_stages(lambda: JsonlReader(str(documents), glob_pattern="*.jsonl.gz"), len(written),
                                       work / "minhash", config), args.workers, work / "logs" / "minhash")
    print(json.dumps({"tool": "datatrove 0.10.1", "workers": args.workers, "files": len(files),
                      "documents_s": documents_s, "minhash_s": minhash,
                      "wall_s": round(documents_s + minhash["total"], 3), "docs_in": _stat(stats, 1, "total"),
                      "docs_written": _stat(stats, len(stats.stats) - 1, "total"),
                      "docs_kept_after_minhash": len(_ids(work / "minhash" / "kept")), "failed_tasks": len(failed)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
