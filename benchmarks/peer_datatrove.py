"""The peer: datatrove's WarcReader -> Trafilatura -> LanguageFilter over a folder of .warc.gz files.

Run it with the peer venv (`bash benchmarks/setup_peer.sh` makes it), never the project venv:

    benchmarks/_work/venv-peer/bin/python benchmarks/peer_datatrove.py DIR --workers 2

One datatrove task per input file (LocalPipelineExecutor, tasks = files, workers = N). Prints one JSON line:
docs in (documents the reader produced = HTML/XHTML responses, whatever their HTTP status), docs out (after the
language filter), wall seconds (executor.run(), pool start-up included), input bytes, and the tasks that failed.

Two things differ from a stock datatrove run, neither touching the per-document work:
- LanguageFilter's fastText model comes from a local file (`--lid-model`, default the shared lid.176.ftz) instead
  of being downloaded (datatrove would fetch lid.176.bin, the unquantised 126 MB model, which is not available here).
- A task that raises (datatrove's WarcReader/warcio raises on a truncated record at the end of a .warc.gz, which
  fails the whole task) is recorded and its partial step statistics kept, instead of aborting the pool and with it
  every other task. Stock datatrove would stop the run there.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from datatrove.executor.local import LocalPipelineExecutor  # noqa: E402
from datatrove.pipeline.extractors import Trafilatura  # noqa: E402
from datatrove.pipeline.filters import LanguageFilter  # noqa: E402
from datatrove.pipeline.readers import WarcReader  # noqa: E402
from datatrove.utils.lid import FT176LID  # noqa: E402
from datatrove.utils.stats import PipelineStats  # noqa: E402

DEFAULT_LID = os.environ.get("SLUICE_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data")) \
    + "/lid/lid.176.ftz"


class LocalFT176LID(FT176LID):
    """datatrove's FT176LID with the model read from a local path (no download, no hub cache)."""

    def __init__(self, model_path: str, languages=None, k: int = -1):
        super().__init__(languages, k)
        self.model_path = model_path

    @property
    def model(self):
        if self._model is None:
            from fasttext.FastText import _FastText

            self._model = _FastText(self.model_path)
        return self._model


class LocalLanguageFilter(LanguageFilter):
    name = "🌍 Language ID"

    def __init__(self, model_path: str, languages=None, language_threshold: float = 0.65):
        super().__init__(languages=languages, language_threshold=language_threshold)
        self.model = LocalFT176LID(model_path, self.languages)


class TolerantLocalExecutor(LocalPipelineExecutor):
    """Records a failed task (message in <logging_dir>/failed/NNNNN) and keeps its partial stats; the rest go on."""

    def _run_for_rank(self, rank: int, local_rank: int = 0, node_rank: int = -1) -> PipelineStats:
        try:
            return super()._run_for_rank(rank, local_rank, node_rank)
        except Exception as error:  # noqa: BLE001 - we report it, it is what we measure
            with self.logging_dir.open(f"failed/{rank:05d}", "w") as handle:
                handle.write(f"{type(error).__name__}: {error}")
            return PipelineStats(self.pipeline)


def _stat(stats: PipelineStats, step: int, key: str) -> int:
    entry = stats.stats[step].to_dict()["stats"].get(key)
    if entry is None:
        return 0
    return int(entry["total"] if isinstance(entry, dict) else entry)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", type=Path, help="folder searched recursively for *.warc.gz")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--lid-model", default=DEFAULT_LID)
    parser.add_argument("--language-threshold", type=float, default=0.3,
                        help="LanguageFilter threshold (0.3 = sluice's default min_score; datatrove's is 0.65)")
    parser.add_argument("--fastest", action="store_true", help=(
        "datatrove's fastest extraction: Trafilatura with no_fallback (its faster heuristics, no backup extractors)"
        " and no deduplication; datatrove 0.10.1 ships no other usable extractor (ReadabilityInscriptis needs a"
        " readability fork from git)"))
    parser.add_argument("--logging-dir", type=Path, help="datatrove logs/stats (default: a fresh temp dir)")
    args = parser.parse_args(argv)

    folder = args.input.resolve()
    files = sorted(str(path.relative_to(folder)) for path in folder.rglob("*.warc.gz"))
    if not files:
        print(f"no .warc.gz files under {folder}", file=sys.stderr)
        return 2
    if not Path(args.lid_model).is_file():
        print(f"fastText model {args.lid_model} not found", file=sys.stderr)
        return 2
    logging_dir = args.logging_dir or Path(tempfile.mkdtemp(prefix="datatrove-logs-"))
    logging_dir.mkdir(parents=True, exist_ok=True)
    paths_file = logging_dir / "paths.txt"
    paths_file.write_text("".join(f"{name}\n" for name in files))
    input_bytes = sum((folder / name).stat().st_size for name in files)

    executor = TolerantLocalExecutor(
        pipeline=[
            WarcReader(str(folder), paths_file=str(paths_file)),
            # datatrove's defaults: favour_precision, deduplicate, 1 s timeout per document
            Trafilatura(deduplicate=False, no_fallback=True) if args.fastest else Trafilatura(),
            LocalLanguageFilter(args.lid_model, language_threshold=args.language_threshold),
        ],
        tasks=len(files),
        workers=args.workers,
        logging_dir=str(logging_dir),
        skip_completed=False,
    )
    started = time.perf_counter()
    stats = executor.run()
    wall = time.perf_counter() - started

    failed_dir = logging_dir / "failed"
    failed = {files[int(marker.name)]: marker.read_text() for marker in sorted(failed_dir.glob("*"))} \
        if failed_dir.is_dir() else {}
    result = {
        "tool": "datatrove 0.10.1",
        "workers": args.workers,
        "extractor": "Trafilatura(deduplicate=False, no_fallback=True)" if args.fastest else "Trafilatura()",
        "tasks": len(files),
        "files": len(files),
        "input_bytes": input_bytes,
        "docs_in": _stat(stats, 1, "total"),  # documents handed to Trafilatura = what WarcReader produced
        "docs_extracted": _stat(stats, 1, "forwarded"),
        "extract_timeouts": _stat(stats, 1, "timeout"),
        "extract_errors": _stat(stats, 1, "clean_error"),
        "docs_out": _stat(stats, 2, "forwarded"),
        "wall_seconds": round(wall, 3),
        "step_seconds": {stat.name: round(stat.time_stats.total, 3) for stat in stats.stats},
        "failed_tasks": failed,
        "logging_dir": str(logging_dir),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
