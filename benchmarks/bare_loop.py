"""The floor for sluice's orchestration cost: the same extraction in one process, no Prefect, no Dask.

    .venv/bin/python benchmarks/bare_loop.py DIR [--mode sluice|raw|both] [--recipe configs/demo.yaml]
                                                  [--profile FILE]

- `sluice`: for every input file, `tasks.extract.shard.extract_shard(ShardJob(...), config, log)` (the per-shard
  function the flow's Dask tasks run) into a fresh temp dir, one file after the other. `config` is the recipe's
  `extract` section with `{data_dir}` expanded, exactly what the extract stage hands its tasks, so the
  comparison with the flow's extract stage is like for like.
- `raw`: FastWARC ArchiveIterator (responses, HTTP parsed) + Resiliparse `extract_plain_text(main_content=True)`
  + fastText predict on the first 4,000 characters, nothing else (no charset cascade beyond Resiliparse's
  detection, no content-encoding decoding, no HTML-to-text post-filters, no URL filter, no Parquet): a reference
  for what the libraries alone cost.

Prints one JSON line per mode. `--profile FILE` runs the sluice loop under cProfile and writes the top functions
(cumulative and own time) plus a per-phase breakdown per candidate document to FILE.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import input_files  # noqa: E402

# Functions whose cumulative time makes up the per-document phases of extract_shard (for --profile).
PHASES = {
    "read records (FastWARC + record copy)": ("tasks/extract/records.py", "_from_fastwarc"),
    "HTTP parse + decode": ("tasks/extract/http_response.py", "parse_http_response"),
    "charset detect + decode": ("tasks/extract/charset.py", "decode_html"),
    "HTML -> text": ("tasks/extract/html_text.py", "html_to_text"),
    "URL filter": ("tasks/extract/url_filter.py", "blocked_reason"),
    "language ID": ("tasks/extract/langid.py", "predict"),
    "language ID model load": ("tasks/extract/langid.py", "_load"),
    "Parquet write": ("storage/document_shard.py", "write_documents"),
    "blocklist load": ("tasks/extract/url_filter.py", "load_blocklist"),
}


def extract_config_of(recipe_path: Path):
    """The recipe's extract config as the extract stage passes it to its tasks ({data_dir} expanded)."""
    from configs.schema import load_recipe
    from storage.locations import shared_data_dir

    recipe = load_recipe(recipe_path)
    data_dir = recipe.data_dir or str(shared_data_dir())
    config = recipe.extract
    files = [path.replace("{data_dir}", data_dir) for path in config.url_filter.blocklist_files]
    config = config.model_copy(update={"url_filter": config.url_filter.model_copy(update={"blocklist_files": files})})
    return config, data_dir


def sluice_loop(files: list[Path], recipe_path: Path, profile_to: Path | None = None) -> dict:
    from tasks.extract.langid import resolve_model_path
    from tasks.extract.shard import ShardJob, extract_shard
    from tasks.stats import StageStats

    config, data_dir = extract_config_of(recipe_path)
    lid_model = resolve_model_path(config.langid.model_path, data_dir)
    log = logging.getLogger("sluice.bench.bare")
    log.setLevel(logging.ERROR)  # the damaged-record warnings would otherwise dominate a profile of stderr
    total = StageStats()
    profiler = cProfile.Profile() if profile_to else None
    with tempfile.TemporaryDirectory(prefix="sluice-bare-") as out:
        started, cpu_started = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        for index, path in enumerate(files):
            job = ShardJob(str(path), f"{out}/{index:05d}.parquet", "bench", lid_model)
            total.merge(StageStats.from_dict(extract_shard(job, config, log)))
        if profiler:
            profiler.disable()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    result = {"mode": "sluice extract_shard loop", "files": len(files), "wall_seconds": round(wall, 3),
              "cpu_seconds": round(cpu, 3),
              "records_read": total.records_read, "candidates": total.candidates,
              "documents_out": total.documents_out, "bytes_in": total.bytes_in,
              "drops": dict(total.drops), "problems": dict(total.problems)}
    if profiler:
        result["profile"] = str(profile_to)
        result["phases_ms_per_candidate"] = _write_profile(profiler, profile_to, wall, total)
    return result


def _write_profile(profiler: cProfile.Profile, path: Path, wall: float, total) -> dict:
    stats = pstats.Stats(profiler)
    html_docs = total.candidates - total.drops.get("non_html", 0)
    lines = [f"# cProfile of the sluice extract_shard loop ({wall:.2f} s under the profiler, "
             f"{total.candidates} candidates, {html_docs} not dropped as non_html, {total.documents_out} out)", "",
             "## per phase (cumulative time of the function; ms per candidate document)", ""]
    phase_rows = []
    for phase, (file_part, func) in PHASES.items():
        seconds, calls = 0.0, 0
        for (filename, _line, name), (_cc, nc, _tt, ct, _callers) in stats.stats.items():
            if name == func and filename.replace(os.sep, "/").endswith(file_part):
                seconds += ct
                calls += nc
        phase_rows.append((phase, seconds, calls))
    for phase, seconds, calls in sorted(phase_rows, key=lambda row: -row[1]):
        per_doc = 1000 * seconds / total.candidates if total.candidates else 0.0
        lines.append(f"{phase:42s} {seconds:8.3f} s  {100 * seconds / wall:5.1f} %  {per_doc:7.3f} ms/doc  "
                     f"({calls} calls)")
    for sort in ("cumulative", "tottime"):
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats(sort).print_stats(35)
        lines += ["", f"## top 35 by {sort}", "", buffer.getvalue()]
    path.write_text("\n".join(lines))
    phases = {phase: round(1000 * seconds / total.candidates, 3) if total.candidates else 0.0
              for phase, seconds, _ in sorted(phase_rows, key=lambda row: -row[1])}
    phases["total (profiled wall)"] = round(1000 * wall / total.candidates, 3) if total.candidates else 0.0
    return phases


def raw_loop(files: list[Path], lid_model: str, max_chars: int = 4000) -> dict:
    import fasttext
    from fastwarc.warc import ArchiveIterator, WarcRecordType
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    started, cpu_started = time.perf_counter(), time.process_time()
    fasttext.FastText.eprint = lambda *args, **kwargs: None
    model = fasttext.load_model(lid_model)
    records = html = kept = errors = 0
    bytes_in = 0
    for path in files:
        bytes_in += path.stat().st_size
        with open(path, "rb") as stream:
            try:
                for record in ArchiveIterator(stream, record_types=WarcRecordType.response, parse_http=True):
                    records += 1
                    if "html" not in (record.http_content_type or ""):
                        continue
                    html += 1
                    body = record.reader.read()
                    text = extract_plain_text(bytes_to_str(body, detect_encoding(body)), main_content=True)
                    sample = " ".join(text[:max_chars].split())
                    if not sample:
                        continue
                    labels, scores = model.predict(sample, k=1)
                    if scores[0] >= 0.3:
                        kept += 1
            except Exception:  # noqa: BLE001 - a damaged file ends this file's loop, nothing more
                errors += 1
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {"mode": "raw libraries loop", "files": len(files), "wall_seconds": round(wall, 3),
            "cpu_seconds": round(cpu, 3),
            "responses": records, "html_responses": html, "documents_out": kept, "bytes_in": bytes_in,
            "files_with_errors": errors}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", type=Path, help="folder searched recursively for WARC/WET/ARC files")
    parser.add_argument("--mode", choices=("sluice", "raw", "both"), default="both")
    parser.add_argument("--recipe", type=Path, default=ROOT / "configs" / "demo.yaml",
                        help="recipe whose extract section is used (default configs/demo.yaml)")
    parser.add_argument("--profile", type=Path, help="profile the sluice loop and write the report here")
    args = parser.parse_args(argv)
    files = input_files(args.input)
    if not files:
        print(f"no input files under {args.input}", file=sys.stderr)
        return 2
    if args.mode in ("sluice", "both"):
        print(json.dumps(sluice_loop(files, args.recipe, args.profile)), flush=True)
    if args.mode in ("raw", "both"):
        from tasks.extract.langid import resolve_model_path

        config, data_dir = extract_config_of(args.recipe)
        print(json.dumps(raw_loop(files, resolve_model_path(config.langid.model_path, data_dir),
                                  config.langid.max_chars)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
