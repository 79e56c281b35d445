"""Extraction throughput, side by side: datatrove (1 and 2 workers), the bare loop, and sluice's flow (1 and 2 workers).

    .venv/bin/python benchmarks/throughput.py            # builds the bench corpus once, runs everything (~10 min)

Writes benchmarks/results/throughput.json and throughput.md. Everything it creates lives under benchmarks/_work/
(gitignored): the corpus, the peer venv, the Prefect home, the MLflow database and artifacts, the stage stores.

What is measured, all on one corpus and in fresh processes:
- datatrove 0.10.1 `WarcReader -> Trafilatura -> LanguageFilter` (benchmarks/peer_datatrove.py, own venv) with 1
  and 2 workers. datatrove is several times slower per document than sluice, so by default it runs on a subset of the
  corpus's shards (the damaged shard(s) plus the first clean ones, `--peer-files`); sluice's per-document rate on
  exactly those shards is taken from the flow run's per-shard stats, so that comparison is like for like.
- the bare loop (benchmarks/bare_loop.py): sluice's extract_shard over every file in one process, no Prefect or
  Dask; and the raw-libraries loop (FastWARC + Resiliparse + fastText only).
- `flows.curation.curation_flow(recipe)` with dask.n_workers 1 and 2, recipe = configs/demo.yaml with the corpus as
  input and a fresh store each time. The extract manifest's `wall_seconds` is the stage's steady state; the rest of
  the flow call (Prefect flow run + ephemeral server, MLflow run, Dask LocalCluster start and stop, reports) is
  start-up/teardown, also measured on its own by a flow run over a one-document WARC.

Documents per second use one numerator for every tool: the HTML responses in the corpus (any HTTP status; what a
WARC reader hands to an HTML extractor), counted once with FastWARC.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import re
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
WORK = BENCH / "_work"
RESULTS = BENCH / "results"
PEER_PYTHON = WORK / "venv-peer" / "bin" / "python"
DATA_DIR = Path(os.environ.get("SLUICE_DATA_DIR", ROOT.parent / "shared" / "data"))
LID_MODEL = DATA_DIR / "lid" / "lid.176.ftz"
TINY_INPUT = DATA_DIR / "warc" / "commoncrawl" / "whirlwind-python" / "whirlwind.warc.gz"  # one HTML page
REAL_WARCS = [DATA_DIR / "warc" / rel for rel in (
    "webarchive/archivesunleashed-aut/example.warc.gz", "commoncrawl/chatnoir-resiliparse/warcfile.warc.gz",
    "webarchive/allenai-dolma/sample-0000.warc.gz", "webarchive/allenai-dolma/sample-0001.warc.gz",
    "commoncrawl/whirlwind-python/whirlwind.warc.gz")]
SUFFIXES = (".warc.gz", ".warc.lz4", ".warc.zst", ".warc", ".wet.gz", ".wet", ".arc.gz", ".arc")
GOALS = {"ours_vs_datatrove_per_core": 10.0, "ours_stage_vs_bare_max": 1.3, "scaling_2w_over_1w": 1.8}


def bench_env() -> dict[str, str]:
    """Keep every embedded service's state under benchmarks/_work, never the project's .state/."""
    env = dict(os.environ)
    env.update({
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "1",
        "PREFECT_HOME": str(WORK / "prefect"),
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
        "MLFLOW_TRACKING_URI": f"sqlite:///{WORK / 'mlflow.db'}",
        "SLUICE_STATE_DIR": str(WORK / "state"),
        "SLUICE_DATA_DIR": str(DATA_DIR),
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
        # This environment sets PYTHONDONTWRITEBYTECODE; the project venv is compiled at set-up, the peer venv is not.
        # Measure with bytecode (kept outside the venvs); the cost without it is measured apart (import probe).
        "PYTHONPYCACHEPREFIX": str(WORK / "pycache"),
    })
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PREFECT_API_URL", None)  # an ephemeral server of our own, like `sluice run`
    return env


# ----------------------------------------------------------------------------------------------- corpus


def ensure_corpus(requested: Path | None, log) -> tuple[Path, str]:
    """The bench corpus (built once with `sluice corpus --size bench --seed 0`), else a stand-in from the real WARCs."""
    if requested:
        return requested, f"given: {requested}"
    bench = WORK / "corpus-bench"
    if not _has_inputs(bench):
        log(f"building the bench corpus in {bench} ...")
        started = time.perf_counter()
        shutil.rmtree(bench, ignore_errors=True)
        proc = subprocess.run([str(ROOT / ".venv" / "bin" / "sluice"), "corpus", "--size", "bench", "--seed", "0",
                               "--out", str(bench)], cwd=ROOT, env=bench_env(), capture_output=True, text=True)
        if proc.returncode == 0 and _has_inputs(bench):
            log(f"  built in {time.perf_counter() - started:.1f} s")
        else:
            log(f"  `sluice corpus --size bench` failed (rc {proc.returncode}): {proc.stderr.strip()[-400:]}")
            shutil.rmtree(bench, ignore_errors=True)
    if _has_inputs(bench):
        return bench, "sluice corpus --size bench --seed 0"
    return stand_in_corpus(log), "stand-in: concatenated copies of the real WARCs in shared/data/warc (see notes)"


def _has_inputs(folder: Path) -> bool:
    return folder.is_dir() and any(p.name.endswith(SUFFIXES) for p in folder.rglob("*"))


def stand_in_corpus(log, shards: int = 8) -> Path:
    """Until the generator exists: each shard = the real multi-page WARCs concatenated; the last one cut short."""
    folder = WORK / "corpus-standin" / "warc"
    if folder.is_dir() and len(list(folder.glob("*.warc.gz"))) == shards:
        return folder.parent
    log(f"building a stand-in corpus in {folder} ...")
    folder.mkdir(parents=True, exist_ok=True)
    blob = b"".join(path.read_bytes() for path in REAL_WARCS)
    for index in range(shards):
        data = blob if index < shards - 1 else blob[:-5000]  # a truncated record at the end, as a crawl cut off
        (folder / f"standin-{index:05d}.warc.gz").write_bytes(data)
    return folder.parent


def corpus_inputs(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))


def gzip_is_complete(path: Path) -> bool:
    """False when a multi-member gzip file ends inside a member (a truncated tail)."""
    try:
        with gzip.open(path, "rb") as handle:
            while handle.read(1 << 22):
                pass
        return True
    except (EOFError, OSError, zlib.error):
        return False


def census(files: list[Path]) -> dict:
    """Counted once with FastWARC: records, responses, HTML responses (the docs/s numerator), 2xx HTML responses."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    totals = {"files": len(files), "bytes": 0, "responses": 0, "html_responses": 0, "html_2xx": 0,
              "per_file": {}}
    for path in files:
        counts = {"bytes": path.stat().st_size, "responses": 0, "html_responses": 0, "html_2xx": 0,
                  "gzip_complete": gzip_is_complete(path) if path.name.endswith(".gz") else None}
        with open(path, "rb") as stream:
            with contextlib.suppress(Exception):
                for record in ArchiveIterator(stream, record_types=WarcRecordType.response, parse_http=True):
                    counts["responses"] += 1
                    if "html" in (record.http_content_type or ""):
                        counts["html_responses"] += 1
                        if 200 <= (record.http_headers.status_code or 0) < 300:
                            counts["html_2xx"] += 1
        for key in ("bytes", "responses", "html_responses", "html_2xx"):
            totals[key] += counts[key]
        totals["per_file"][str(path)] = counts
    return totals


# ----------------------------------------------------------------------------------------------- runs


class TreeCpu:
    """CPU seconds (user + system) of a process and all its descendants, polled with psutil; also the peak
    resident memory of the largest single process and of the whole tree at one poll.

    RUSAGE_CHILDREN misses processes nobody waits for (datatrove's forkserver pool, Dask's workers), so the
    harness polls the tree every `interval` seconds and keeps each process's last value; a process's last
    `interval` before it exits can be missed.
    """

    def __init__(self, pid: int, interval: float = 0.5):
        import psutil

        self._psutil, self._root, self._interval = psutil, psutil.Process(pid), interval
        self._seen: dict[tuple[int, float], float] = {}
        self.peak_process_rss = 0
        self.peak_tree_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        try:
            procs = [self._root, *self._root.children(recursive=True)]
        except self._psutil.Error:
            return
        tree_rss = 0
        for proc in procs:
            with contextlib.suppress(self._psutil.Error):
                times = proc.cpu_times()
                key = (proc.pid, proc.create_time())
                self._seen[key] = max(self._seen.get(key, 0.0), times.user + times.system)
                rss = proc.memory_info().rss
                tree_rss += rss
                self.peak_process_rss = max(self.peak_process_rss, rss)
        self.peak_tree_rss = max(self.peak_tree_rss, tree_rss)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._poll()

    def stop(self) -> tuple[float, int]:
        self._poll()
        self._stop.set()
        self._thread.join()
        return sum(self._seen.values()), len(self._seen)


def run_json(command: list[str], log, label: str, timeout: float = 1800,
             env: dict | None = None) -> tuple[list[dict], dict, str]:
    """Run a child; return the JSON lines it printed on stdout, its wall/CPU seconds and load, and its stderr."""
    log(f"{label} ...")
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, env=env or bench_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    sampler = TreeCpu(proc.pid)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    wall = time.perf_counter() - started
    cpu, processes = sampler.stop()
    cost = {"process_seconds": round(wall, 3), "process_tree_cpu_seconds": round(cpu, 2),
            "processes_seen": processes, "peak_process_rss_mb": round(sampler.peak_process_rss / 2**20, 1),
            "peak_tree_rss_mb": round(sampler.peak_tree_rss / 2**20, 1),
            "loadavg_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    lines = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                lines.append(json.loads(line))
    safe = label.replace(" ", "_").replace("/", "_")
    (WORK / "logs").mkdir(parents=True, exist_ok=True)
    (WORK / "logs" / f"{safe}.stderr.log").write_text(stderr)
    (WORK / "logs" / f"{safe}.stdout.log").write_text(stdout)
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{label} failed (rc {proc.returncode}); stderr tail:\n{stderr[-3000:]}")
    log(f"  {label}: {wall:.1f} s wall, {cpu:.1f} s CPU ({processes} processes), "
        f"load {cost['loadavg_1min_before_after']}")
    return lines, cost, stderr


def flow_child(args) -> int:
    """In a fresh process: run curation_flow once and print timings (flow call, cluster start, stage) as JSON."""
    t_process = time.perf_counter()
    from configs.schema import load_recipe, parse_recipe
    import flows.curation as curation

    t_imported = time.perf_counter()
    raw = load_recipe(ROOT / "configs" / "demo.yaml").model_dump(mode="json")
    raw["name"] = f"bench-{args.label}"
    raw["input"]["paths"] = [str(Path(p).resolve()) for p in args.inputs]
    raw["input"]["source"] = "bench"
    raw["store"] = str(Path(args.store).resolve())
    raw["dask"]["n_workers"] = args.workers
    raw["dask"]["address"] = None
    raw["mlflow"]["experiment"] = "sluice-bench"
    raw["mlflow"]["tracking_uri"] = None  # MLFLOW_TRACKING_URI, set under benchmarks/_work
    recipe = parse_recipe(raw, origin="bench recipe")

    marks: dict[str, float] = {}
    cpu_marks: dict[str, dict] = {}
    original_cluster = getattr(curation, "dask_cluster", None)
    original_experiment = getattr(curation, "use_experiment", None)
    if original_cluster is not None:
        @contextlib.contextmanager
        def timed_cluster(config):
            marks["cluster_enter"] = time.perf_counter()
            with original_cluster(config) as address:
                marks["cluster_ready"] = time.perf_counter()
                cpu_marks["ready"] = cpu_by_role()
                try:
                    yield address
                finally:
                    marks["cluster_exit"] = time.perf_counter()
                    cpu_marks["exit"] = cpu_by_role()
            marks["cluster_closed"] = time.perf_counter()
        curation.dask_cluster = timed_cluster
    if original_experiment is not None:
        def timed_experiment(*a, **k):
            marks.setdefault("flow_body", time.perf_counter())
            return original_experiment(*a, **k)
        curation.use_experiment = timed_experiment

    t_call = time.perf_counter()
    result = curation.curation_flow(recipe)
    t_return = time.perf_counter()
    extract = result["stages"]["extract"]
    stats = extract["stats"]
    stage_dir = extract["manifest"].rsplit("/", 1)[0]
    shards = []
    for sidecar in sorted(Path(stage_dir, "shards").glob("*.stats.json")):
        shard = json.loads(sidecar.read_text())
        shards.append({key: shard.get(key) for key in ("input", "candidates", "documents_out", "seconds",
                                                        "records_read", "bytes_in")})

    def since(mark: str, base: float) -> float | None:
        return round(marks[mark] - base, 3) if mark in marks else None

    print(json.dumps({
        "label": args.label, "workers": args.workers, "cached": extract["cached"],
        "import_seconds": round(t_imported - t_process, 3),
        "flow_call_seconds": round(t_return - t_call, 3),
        "to_flow_body_seconds": since("flow_body", t_call),        # Prefect flow run (+ ephemeral server) start
        "to_cluster_enter_seconds": since("cluster_enter", t_call),  # + MLflow experiment and run
        "cluster_start_seconds": round(marks["cluster_ready"] - marks["cluster_enter"], 3)
        if "cluster_ready" in marks else None,
        "cluster_close_seconds": round(marks["cluster_closed"] - marks["cluster_exit"], 3)
        if "cluster_closed" in marks else None,
        "in_cluster_seconds": round(marks["cluster_exit"] - marks["cluster_ready"], 3)
        if "cluster_exit" in marks else None,
        "after_cluster_seconds": round(t_return - marks["cluster_closed"], 3) if "cluster_closed" in marks else None,
        "stage_wall_seconds": stats.get("wall_seconds"),
        "in_cluster_cpu_seconds_by_role": cpu_delta(cpu_marks.get("ready"), cpu_marks.get("exit")),
        "stage_task_seconds": stats.get("seconds"),
        "candidates": stats.get("candidates"), "documents_out": stats.get("documents_out"),
        "records_read": stats.get("records_read"), "bytes_in": stats.get("bytes_in"),
        "drops": stats.get("drops"), "problems": stats.get("problems"),
        "shards": shards,
    }), flush=True)
    return 0


def cpu_by_role() -> dict:
    """CPU seconds so far of this process and each descendant, keyed by (pid, start time), with its role."""
    import psutil

    me = psutil.Process()
    out = {}
    for proc in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            cmd = " ".join(proc.cmdline())
            role = ("flow process (+ Dask scheduler)" if proc.pid == me.pid else
                    "Prefect server" if "prefect" in cmd and ("server" in cmd or "uvicorn" in cmd) else
                    "Dask workers" if "multiprocessing" in cmd and "spawn" in cmd else "other")
            times = proc.cpu_times()
            out[(proc.pid, proc.create_time())] = (role, times.user + times.system)
    return out


def cpu_delta(before: dict | None, after: dict | None) -> dict:
    if not before or not after:
        return {}
    roles: dict[str, float] = {}
    for key, (role, seconds) in after.items():
        roles[role] = roles.get(role, 0.0) + seconds - before.get(key, (role, 0.0))[1]
    return {role: round(seconds, 2) for role, seconds in sorted(roles.items())}


def run_flow(inputs: list[Path], workers: int, label: str, log) -> dict:
    store = Path(tempfile.mkdtemp(prefix=f"store-{label}-", dir=WORK / "stores"))
    command = [sys.executable, str(Path(__file__).resolve()), "_flow", "--workers", str(workers), "--label", label,
               "--store", str(store), *map(str, inputs)]
    deadline = time.monotonic() + float(os.environ.get("SLUICE_BENCH_FLOW_RETRY_SECONDS", "1200"))
    while True:
        try:
            lines, cost, stderr = run_json(command, log, f"flow {label}")
            break
        except RuntimeError as error:
            if time.monotonic() > deadline:
                raise
            log(f"  {error}\n  (the flow may be mid-edit; retrying in 120 s)")
            time.sleep(120)
    shutil.rmtree(store, ignore_errors=True)
    result = lines[-1] | cost
    result["timeline"] = flow_timeline(stderr, result)
    return result


LOG_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) \| \w+\s*\| (.*)$")


def flow_timeline(stderr: str, result: dict) -> dict:
    """From the Prefect/Dask log lines: temporary Prefect servers started, time to the first task, busy span.

    Task start = its "Finished" log line minus the seconds extract_shard recorded for that shard.
    """
    events: list[tuple[float, str]] = []
    for line in stderr.splitlines():
        match = LOG_LINE.match(line)
        if match:
            h, m, sec, ms, text = match.groups()
            events.append((int(h) * 3600 + int(m) * 60 + int(sec) + int(ms) / 1000, text))
    if not events:
        return {}
    servers = [t for t, text in events if "Starting temporary server" in text]
    stage_start = next((t for t, text in events if re.search(r"extract: \d+ input files", text)), None)
    seconds_by_name = {Path(shard["input"]).name: shard["seconds"] or 0.0 for shard in result.get("shards", [])}
    finishes = []
    for t, text in events:
        hit = re.search(r"Task run 'extract (.+?)' - Finished in state Completed", text)
        if hit and hit.group(1) in seconds_by_name:
            finishes.append((t - seconds_by_name[hit.group(1)], t))
    out = {"prefect_temporary_servers_started": len(servers),
           "worker_side_prefect_servers": max(0, len(servers) - 1),
           "worker_server_start_after_stage_start_seconds":
               [round(t - stage_start, 2) for t in servers[1:]] if stage_start is not None else None}
    if stage_start is not None and finishes:
        first_start = min(start for start, _ in finishes)
        last_end = max(end for _, end in finishes)
        out.update({"stage_start_to_first_task_seconds": round(first_start - stage_start, 2),
                    "first_task_start_to_last_task_end_seconds": round(last_end - first_start, 2)})
    return out


def run_peer(folder: Path, workers: int, log) -> dict:
    logs = WORK / "datatrove-logs" / f"w{workers}"
    shutil.rmtree(logs, ignore_errors=True)
    lines, cost, _ = run_json([str(PEER_PYTHON), str(BENCH / "peer_datatrove.py"), str(folder),
                               "--workers", str(workers), "--lid-model", str(LID_MODEL),
                               "--logging-dir", str(logs)], log, f"datatrove w{workers}", timeout=3600)
    return lines[-1] | cost


IMPORT_SETS = {
    # what the flow process imports (plus pyarrow's lazy pandas import on the first Parquet write)
    "flow process": "import flows.curation, tasks.extract.shard, pyarrow as pa; pa.Table.from_pydict({'a': [1]})",
    # what a Dask worker imports to unpickle and run extract_shard_task (its module pulls flows.reporting/mlflow)
    "Dask worker (extract_shard_task)": "import flows.extract_stage, pyarrow as pa; pa.Table.from_pydict({'a': [1]})",
    # what the work itself needs
    "extract_shard alone": "import tasks.extract.shard, pyarrow as pa; pa.Table.from_pydict({'a': [1]})",
}


def import_probe(log) -> dict:
    """CPU seconds a fresh process spends on imports: the flow process without and with byte-compiled modules
    (the venv ships none and PYTHONDONTWRITEBYTECODE is set here), and a Dask worker vs the bare work."""
    def code(imports: str) -> str:
        return (f"import time, resource; t = time.perf_counter(); {imports}; "
                "u = resource.getrusage(resource.RUSAGE_SELF); "
                "print('{\"wall\": %.3f, \"cpu\": %.3f}' % (time.perf_counter() - t, u.ru_utime + u.ru_stime))")

    no_bytecode = bench_env()
    no_bytecode.pop("PYTHONPYCACHEPREFIX")
    no_bytecode["PYTHONDONTWRITEBYTECODE"] = "1"
    out = {}
    for name, env, imports in (("without_bytecode", no_bytecode, IMPORT_SETS["flow process"]),
                               ("with_bytecode", bench_env(), IMPORT_SETS["flow process"]),
                               *((f"with_bytecode: {what}", bench_env(), imports)
                                 for what, imports in IMPORT_SETS.items() if what != "flow process")):
        lines, _, _ = run_json([sys.executable, "-c", code(imports)], log, f"import probe {name}", env=env)
        out[name] = {"wall_seconds": lines[-1]["wall"], "cpu_seconds": lines[-1]["cpu"]}
    out["imports"] = IMPORT_SETS
    return out


def peer_subset(files: list[Path], info: dict, count: int) -> list[Path]:
    """The damaged shard(s) first (to see how datatrove takes them), then the first clean .warc.gz shards."""
    gz = [p for p in files if p.name.endswith(".warc.gz")]
    damaged = [p for p in gz if info["per_file"][str(p)]["gzip_complete"] is False]
    clean = [p for p in gz if p not in damaged]
    if count <= 0 or count >= len(gz):
        return gz
    chosen = damaged[:max(1, count // 2)] + clean
    return sorted(chosen[:count])


def link_subset(files: list[Path]) -> Path:
    folder = WORK / "peer-input"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for path in files:
        (folder / path.name).symlink_to(path.resolve())
    return folder


# ----------------------------------------------------------------------------------------------- figures


def rate(docs: float, bytes_: float, seconds: float | None, cores: int, cpu: float | None = None) -> dict:
    if not seconds:
        return {"seconds": seconds}
    out = {"seconds": round(seconds, 3), "cores": cores,
           "docs_per_s": round(docs / seconds, 2), "docs_per_s_per_core": round(docs / seconds / cores, 2),
           "warc_mb_per_s": round(bytes_ / 1e6 / seconds, 3),
           "warc_mb_per_s_per_core": round(bytes_ / 1e6 / seconds / cores, 3)}
    if cpu:
        out.update({"cpu_seconds": round(cpu, 2), "docs_per_cpu_second": round(docs / cpu, 2)})
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def machine_info() -> dict:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with contextlib.suppress(OSError):
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split(":", 1)[1].strip()
    versions = {}
    for name in ("prefect", "dask", "distributed", "fastwarc", "resiliparse", "pyarrow", "mlflow"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version
            versions[name] = version(name)
    with contextlib.suppress(Exception):
        out = subprocess.run([str(PEER_PYTHON), "-c", "from importlib.metadata import version as v; "
                              "print(v('datatrove'), v('trafilatura'), v('warcio'))"],
                             capture_output=True, text=True, timeout=60).stdout.split()
        versions.update({"peer datatrove": out[0], "peer trafilatura": out[1], "peer warcio": out[2]})
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu": cpu,
            "cores": os.cpu_count(), "memory": mem, "versions": versions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("_flow", help="(internal) one curation_flow run in this process")
    child.add_argument("inputs", nargs="+")
    child.add_argument("--workers", type=int, required=True)
    child.add_argument("--label", required=True)
    child.add_argument("--store", required=True)
    parser.add_argument("--corpus", type=Path, help="input folder (default: the bench corpus, built if missing)")
    parser.add_argument("--peer-files", type=int, default=2,
                        help="shards given to datatrove (default 2; 0 = all, which adds ~8 min on 2 cores)")
    parser.add_argument("--rebuild-corpus", action="store_true", help="regenerate the bench corpus first")
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--skip-flow", action="store_true")
    parser.add_argument("--no-profile", dest="profile", action="store_false",
                        help="skip the cProfile pass over the bare loop (per-phase ms per document)")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs of each sluice flow and of the bare loops; the fastest counts (default 2)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    sub.add_parser("_render", help="(internal) rebuild throughput.md (figures, notes) from throughput.json")
    args = parser.parse_args(argv)
    if args.command == "_flow":
        return flow_child(args)
    if args.command == "_render":
        return render_again(args.out)

    os.environ.update(bench_env())
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "stores").mkdir(exist_ok=True)
    started_at = dt.datetime.now(dt.timezone.utc)
    t0 = time.perf_counter()
    log_lines: list[str] = []

    def log(message: str) -> None:
        stamp = f"[{time.perf_counter() - t0:7.1f}s] {message}"
        print(stamp, file=sys.stderr, flush=True)
        log_lines.append(stamp)

    if args.rebuild_corpus and not args.corpus:
        shutil.rmtree(WORK / "corpus-bench", ignore_errors=True)
    corpus, corpus_origin = ensure_corpus(args.corpus, log)
    files = corpus_inputs(corpus)
    info = census(files)
    html, nbytes = info["html_responses"], info["bytes"]
    damaged = [Path(p).name for p, c in info["per_file"].items() if c["gzip_complete"] is False]
    log(f"corpus {corpus}: {len(files)} files, {nbytes / 1e6:.1f} MB, {info['responses']} responses, "
        f"{html} HTML responses ({info['html_2xx']} 2xx); truncated gzip: {damaged or 'none'}")

    runs: dict[str, dict] = {}
    # --- sluice's flow: a first run creates the Prefect database (not counted), then cold start-ups and full runs
    if not args.skip_flow:
        first_ever = not (WORK / "prefect").exists()
        runs["flow_warmup"] = run_flow([TINY_INPUT], 1, "warmup", log) | {"created_prefect_db": first_ever}
        runs["import_probe"] = import_probe(log)
        runs["flow_probe_w1"] = run_flow([TINY_INPUT], 1, "probe-w1", log)
        repeats: dict[int, list[dict]] = {1: [], 2: []}
        for attempt in range(1, args.repeat + 1):  # interleaved, so drifting load hits both alike
            for workers in (1, 2):
                repeats[workers].append(run_flow([corpus], workers, f"full-w{workers}-r{attempt}", log))
        for workers, attempts in repeats.items():
            best = min(attempts, key=lambda run: run["stage_wall_seconds"])
            runs[f"flow_w{workers}"] = best | {"repeats": [
                {key: run.get(key) for key in ("stage_wall_seconds", "flow_call_seconds", "process_tree_cpu_seconds",
                                               "in_cluster_cpu_seconds_by_role", "loadavg_1min_before_after")}
                for run in attempts]}
    # --- bare loops (one process, no orchestration); best of --repeat for each loop
    bare_cmd = [sys.executable, str(BENCH / "bare_loop.py"), str(corpus), "--mode", "both"]
    bare_runs = []
    for attempt in range(1, args.repeat + 1):
        lines, cost, _ = run_json(bare_cmd, log, f"bare loops r{attempt}")
        bare_runs.append((lines[0] | {"loadavg_1min_before_after": cost["loadavg_1min_before_after"]}, lines[1]))
    for index, key in enumerate(("bare_sluice", "bare_raw")):
        attempts = [pair[index] for pair in bare_runs]
        runs[key] = min(attempts, key=lambda run: run["wall_seconds"]) | {
            "repeats": [{k: run.get(k) for k in ("wall_seconds", "cpu_seconds")} for run in attempts]}
    if args.profile:
        profile_path = WORK / "extract_shard_profile.txt"
        lines, _, _ = run_json([sys.executable, str(BENCH / "bare_loop.py"), str(corpus), "--mode", "sluice",
                                "--profile", str(profile_path)], log, "bare loop profile")
        runs["bare_sluice_profile"] = {"report": str(profile_path.relative_to(ROOT)),
                                       "phases_ms_per_candidate": lines[0].get("phases_ms_per_candidate")}
    # --- datatrove
    peer_files: list[Path] = []
    if not args.skip_peer:
        proc = subprocess.run(["bash", str(BENCH / "setup_peer.sh")], cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"setup_peer.sh failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        peer_files = peer_subset(files, info, args.peer_files)
        folder = link_subset(peer_files)
        for workers in (1, 2):
            runs[f"datatrove_w{workers}"] = run_peer(folder, workers, log)

    report = figures(runs, info, files, peer_files)
    report["notes"] = notes(runs, info, files, peer_files)
    report.update({
        "date": started_at.isoformat(timespec="seconds"),
        "machine": machine_info(),
        "command": "/work/main/.venv/bin/python benchmarks/throughput.py" if not argv else
                   f".venv/bin/python benchmarks/throughput.py {' '.join(argv)}",
        "corpus": {"path": str(corpus.relative_to(ROOT)) if corpus.is_relative_to(ROOT) else str(corpus),
                   "origin": corpus_origin, "files": len(files), "bytes": nbytes,
                   "responses": info["responses"], "html_responses": html, "html_2xx": info["html_2xx"],
                   "truncated_gzip_files": damaged},
        "census_per_file": info["per_file"],
        "peer_files": [str(p) for p in peer_files],
        "runs": runs,
        "total_benchmark_seconds": round(time.perf_counter() - t0, 1),
        "log": log_lines,
    })
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "throughput.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "throughput.md").write_text(markdown(report))
    log(f"wrote {args.out / 'throughput.json'} and {args.out / 'throughput.md'}")
    print(markdown(report))
    return 0


def render_again(out: Path) -> int:
    report = json.loads((out / "throughput.json").read_text())
    files = [Path(p) for p in report["census_per_file"]]
    info = {"per_file": report["census_per_file"], "html_responses": report["corpus"]["html_responses"],
            "bytes": report["corpus"]["bytes"]}
    peer_files = [Path(p) for p in report.get("peer_files", [])]
    report.update(figures(report["runs"], info, files, peer_files))
    report["notes"] = notes(report["runs"], info, files, peer_files)
    (out / "throughput.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "throughput.md").write_text(markdown(report))
    return 0


def figures(runs: dict, info: dict, files: list[Path], peer_files: list[Path]) -> dict:
    html, nbytes = info["html_responses"], info["bytes"]
    table: dict[str, dict] = {}
    for workers in (1, 2):
        flow = runs.get(f"flow_w{workers}")
        if flow:
            table[f"sluice flow, {workers} worker(s), whole flow call (start-up included)"] = \
                rate(html, nbytes, flow["flow_call_seconds"], workers, flow.get("process_tree_cpu_seconds"))
            table[f"sluice flow, {workers} worker(s), extract stage wall (manifest wall_seconds)"] = \
                rate(html, nbytes, flow["stage_wall_seconds"], workers,
                     sum(flow.get("in_cluster_cpu_seconds_by_role", {}).values()))
            busy = flow.get("timeline", {}).get("first_task_start_to_last_task_end_seconds")
            if busy:
                table[f"sluice flow, {workers} worker(s), first task start to last task end"] = \
                    rate(html, nbytes, busy, workers)
    if "bare_sluice" in runs:
        table["bare loop: extract_shard, 1 process"] = rate(html, nbytes, runs["bare_sluice"]["wall_seconds"], 1,
                                                            runs["bare_sluice"].get("cpu_seconds"))
        table["raw libraries loop, 1 process (reference)"] = rate(html, nbytes, runs["bare_raw"]["wall_seconds"], 1,
                                                                  runs["bare_raw"].get("cpu_seconds"))

    # datatrove on its subset, and sluice's per-shard task seconds on exactly those shards
    peer_html = sum(info["per_file"][str(p)]["html_responses"] for p in peer_files)
    peer_bytes = sum(info["per_file"][str(p)]["bytes"] for p in peer_files)
    for workers in (1, 2):
        peer = runs.get(f"datatrove_w{workers}")
        if peer:
            table[f"datatrove, {workers} worker(s) ({len(peer_files)} shards)"] = \
                rate(peer_html, peer_bytes, peer["wall_seconds"], workers, peer.get("process_tree_cpu_seconds"))
    same_shards = None
    flow1 = runs.get("flow_w1")
    if flow1 and peer_files:
        names = {p.resolve() for p in peer_files}
        seconds = sum(s["seconds"] or 0 for s in flow1["shards"] if Path(s["input"]).resolve() in names)
        if seconds:
            same_shards = rate(peer_html, peer_bytes, seconds, 1)
            table[f"sluice flow, 1 worker, task seconds on datatrove's {len(peer_files)} shards"] = same_shards

    def per_core(key: str) -> float | None:
        return table.get(key, {}).get("docs_per_s_per_core")

    def per_cpu(key: str) -> float | None:
        return table.get(key, {}).get("docs_per_cpu_second")

    stage1 = runs.get("flow_w1", {}).get("stage_wall_seconds")
    stage2 = runs.get("flow_w2", {}).get("stage_wall_seconds")
    busy1 = runs.get("flow_w1", {}).get("timeline", {}).get("first_task_start_to_last_task_end_seconds")
    busy2 = runs.get("flow_w2", {}).get("timeline", {}).get("first_task_start_to_last_task_end_seconds")
    bare = runs.get("bare_sluice", {}).get("wall_seconds")
    dt1 = per_core(f"datatrove, 1 worker(s) ({len(peer_files)} shards)")
    dt2 = per_core(f"datatrove, 2 worker(s) ({len(peer_files)} shards)")
    ratios = {
        "ours_vs_datatrove_per_core_1w":
            ratio(per_core("sluice flow, 1 worker(s), extract stage wall (manifest wall_seconds)"), dt1),
        "ours_vs_datatrove_per_core_2w":
            ratio(per_core("sluice flow, 2 worker(s), extract stage wall (manifest wall_seconds)"), dt2),
        "ours_vs_datatrove_per_core_same_shards_1w": ratio((same_shards or {}).get("docs_per_s_per_core"), dt1),
        "ours_whole_flow_vs_datatrove_per_core_1w":
            ratio(per_core("sluice flow, 1 worker(s), whole flow call (start-up included)"), dt1),
        "ours_stage_1w_over_bare_seconds": ratio(stage1, bare),
        "ours_busy_span_1w_over_bare_seconds": ratio(busy1, bare),
        "scaling_2w_over_1w_ours_stage": ratio(stage1, stage2),
        "scaling_2w_over_1w_ours_busy_span": ratio(busy1, busy2),
        "scaling_2w_over_1w_ours_whole_flow": ratio(runs.get("flow_w1", {}).get("flow_call_seconds"),
                                                   runs.get("flow_w2", {}).get("flow_call_seconds")),
        "scaling_2w_over_1w_datatrove": ratio(runs.get("datatrove_w1", {}).get("wall_seconds"),
                                             runs.get("datatrove_w2", {}).get("wall_seconds")),
        "bare_over_raw_seconds": ratio(bare, runs.get("bare_raw", {}).get("wall_seconds")),
        # CPU-time based: robust to other load on the machine
        "cpu_ours_stage_vs_datatrove_docs_per_cpu_second_1w":
            ratio(per_cpu("sluice flow, 1 worker(s), extract stage wall (manifest wall_seconds)"),
                  per_cpu(f"datatrove, 1 worker(s) ({len(peer_files)} shards)")),
        "cpu_ours_stage_1w_over_bare_cpu":
            ratio(table.get("sluice flow, 1 worker(s), extract stage wall (manifest wall_seconds)", {}).get("cpu_seconds"),
                  runs.get("bare_sluice", {}).get("cpu_seconds")),
        "cpu_ours_stage_2w_over_1w_cpu":
            ratio(table.get("sluice flow, 2 worker(s), extract stage wall (manifest wall_seconds)", {}).get("cpu_seconds"),
                  table.get("sluice flow, 1 worker(s), extract stage wall (manifest wall_seconds)", {}).get("cpu_seconds")),
    }
    goals = {
        "ours >= 10x datatrove per core": _goal(ratios["ours_vs_datatrove_per_core_1w"], ">=",
                                                GOALS["ours_vs_datatrove_per_core"]),
        "ours stage within 1.3x of bare loop": _goal(ratios["ours_stage_1w_over_bare_seconds"], "<=",
                                                     GOALS["ours_stage_vs_bare_max"]),
        "2 workers >= 1.8x 1 worker (ours, stage)": _goal(ratios["scaling_2w_over_1w_ours_stage"], ">=",
                                                         GOALS["scaling_2w_over_1w"]),
        "(diagnostic) busy span within 1.3x of bare loop": _goal(ratios["ours_busy_span_1w_over_bare_seconds"],
                                                                 "<=", GOALS["ours_stage_vs_bare_max"]),
        "(diagnostic) 2 workers >= 1.8x 1 worker (busy span)": _goal(ratios["scaling_2w_over_1w_ours_busy_span"],
                                                                     ">=", GOALS["scaling_2w_over_1w"]),
    }
    startup = {}
    for workers in (1, 2):
        probe = runs.get(f"flow_probe_w{workers}") or {}
        flow = runs.get(f"flow_w{workers}")
        if flow:
            startup[f"w{workers}"] = {
                "probe_flow_call_seconds (1-document input)": probe.get("flow_call_seconds"),
                "probe_stage_wall_seconds": probe.get("stage_wall_seconds"),
                "full_run_overhead_seconds (flow call - stage wall)":
                    round(flow["flow_call_seconds"] - flow["stage_wall_seconds"], 3),
                "to_flow_body_seconds (Prefect flow run + ephemeral server)": flow["to_flow_body_seconds"],
                "to_cluster_enter_seconds (+ MLflow run)": flow["to_cluster_enter_seconds"],
                "dask_cluster_start_seconds": flow["cluster_start_seconds"],
                "dask_cluster_close_seconds": flow["cluster_close_seconds"],
                "in_cluster_minus_stage_seconds (fingerprinting, subflow, reports)":
                    round(flow["in_cluster_seconds"] - flow["stage_wall_seconds"], 3)
                    if flow.get("in_cluster_seconds") is not None else None,
                "process_imports_seconds": flow["import_seconds"],
                **{f"timeline: {k}": v for k, v in flow.get("timeline", {}).items()},
            }
    if "flow_warmup" in runs:
        warm = runs["flow_warmup"]
        startup["warm-up run (not counted; " + ("created the Prefect DB and the bytecode cache" if
                warm["created_prefect_db"] else "fills the bytecode cache") + "): flow call seconds"] = \
            warm["flow_call_seconds"]
    if "import_probe" in runs:
        probe = runs["import_probe"]
        startup["imports of the flow process, CPU seconds without -> with bytecode"] = \
            f"{probe['without_bytecode']['cpu_seconds']} -> {probe['with_bytecode']['cpu_seconds']}"
        for what in IMPORT_SETS:
            key = f"with_bytecode: {what}"
            if key in probe:
                startup[f"imports of {what}, CPU seconds (with bytecode)"] = probe[key]["cpu_seconds"]
    return {"figures": table, "ratios": ratios, "goals": goals, "startup": startup,
            "peer_shards": [p.name for p in peer_files], "peer_html_responses": peer_html, "peer_bytes": peer_bytes}


def notes(runs: dict, info: dict, files: list[Path], peer_files: list[Path]) -> list[str]:
    out = []
    loads = [run["loadavg_1min_before_after"] for run in runs.values()
             if isinstance(run, dict) and "loadavg_1min_before_after" in run]
    if loads:
        highest = max(max(pair) for pair in loads)
        out.append(f"Machine load: the 1-minute load average during the runs went up to {highest:.1f} on "
                   f"{os.cpu_count()} cores (other jobs share this machine; per-run values are in the JSON). Wall "
                   "seconds, and so the wall-based scaling ratios, are only as good as that; the CPU-second columns "
                   "(process-tree CPU polled with psutil, or in-process CPU for the bare loops) are robust to it.")
    probe = runs.get("import_probe")
    if probe:
        out.append(f"Bytecode: .ci/setup compiles the project venv once (this environment sets "
                   f"PYTHONDONTWRITEBYTECODE=1, so nothing would be cached at run time); importing what a flow "
                   f"process imports costs {probe['without_bytecode']['cpu_seconds']} CPU s without bytecode vs "
                   f"{probe['with_bytecode']['cpu_seconds']} with it. The benchmark also sets "
                   "PYTHONPYCACHEPREFIX=benchmarks/_work/pycache (warmed by the warm-up run) for the peer venv.")
    if peer_files:
        out.append(f"datatrove ran on {len(peer_files)} of the {len(files)} shards ({', '.join(p.name for p in peer_files)}); "
                   "all of them would add about 8 minutes to the benchmark (`--peer-files 0` does that). The row "
                   "'task seconds on datatrove's shards' is sluice's extract_shard time on exactly those shards.")
        out.append("datatrove's LanguageFilter reads the local lid.176.ftz (the quantised model; datatrove would "
                   "download lid.176.bin, which is not available offline) through a subclass of its FT176LID that "
                   "only changes where the model file comes from; language_threshold 0.3 like sluice's min_score.")
        peer_html = sum(info["per_file"][str(p)]["html_responses"] for p in peer_files)
        peer_2xx = sum(info["per_file"][str(p)]["html_2xx"] for p in peer_files)
        out.append(f"datatrove keeps HTTP error pages: WarcReader never looks at the HTTP status, so of the "
                   f"{peer_html} HTML responses in its shards the {peer_html - peer_2xx} that are not 2xx "
                   "(redirects, 404s, 5xx) are extracted and language-filtered like any page; sluice drops them "
                   "as http_redirect / http_client_error / http_server_error before extraction.")
        for key in ("datatrove_w1", "datatrove_w2"):
            run = runs.get(key)
            if run and run.get("failed_tasks"):
                failed = "; ".join(f"{name}: {error}" for name, error in run["failed_tasks"].items())
                out.append(f"{key}: failed task(s) {failed}. warcio raises at the truncated record at the end of "
                           "the .warc.gz and datatrove fails the whole task; a stock LocalPipelineExecutor.run() "
                           "then raises that EOFError itself (checked with 1 and 2 workers: the run fails, tasks "
                           "still in flight are terminated, only ranks finished before it are marked complete). "
                           "The harness records the failure and keeps the task's partial counts instead. sluice "
                           "drops only that record (truncated_record) and keeps the rest of the shard.")
                break
        timeouts = [runs[k]["extract_timeouts"] for k in ("datatrove_w1", "datatrove_w2") if k in runs]
        if any(timeouts):
            out.append(f"Trafilatura hit datatrove's 1 s per-document timeout {timeouts} times (1 and 2 workers); "
                       "each costs at least 1 s plus a restart of the extraction subprocess, and the page is lost.")
    for key in ("flow_w1", "flow_w2"):
        timeline = runs.get(key, {}).get("timeline", {})
        if timeline.get("worker_side_prefect_servers"):
            out.append(f"{key}: {timeline['worker_side_prefect_servers']} Dask worker(s) started their own temporary "
                       "Prefect server (PREFECT_API_URL not passed to the workers): tens of seconds each.")
    return out


def _goal(value: float | None, op: str, target: float) -> dict:
    met = None if value is None else (value >= target if op == ">=" else value <= target)
    return {"value": value, "target": f"{op} {target}", "met": met}


def markdown(report: dict) -> str:
    corpus, machine = report["corpus"], report["machine"]
    out = [
        "# Extraction throughput: sluice vs datatrove", "",
        f"- date: {report['date']}; machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory']}; "
        f"Python {machine['python']}",
        f"- command: `{report['command']}` (total {report['total_benchmark_seconds']:.0f} s)",
        f"- corpus: `{corpus['path']}` ({corpus['origin']}): {corpus['files']} files, {corpus['bytes'] / 1e6:.1f} MB, "
        f"{corpus['responses']} responses, **{corpus['html_responses']} HTML responses** "
        f"({corpus['html_2xx']} with 2xx); truncated gzip tail: {', '.join(corpus['truncated_gzip_files']) or 'none'}",
        "- docs/s = HTML responses / seconds for every row (one numerator, counted with FastWARC); "
        "MB/s = compressed WARC bytes / seconds; per core = divided by the worker processes.",
        f"- versions: {', '.join(f'{k} {v}' for k, v in machine['versions'].items())}", "",
        "| run | seconds | docs/s | docs/s per core | WARC MB/s | MB/s per core | CPU s | docs per CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in report["figures"].items():
        if "docs_per_s" not in row:
            out.append(f"| {name} | {row.get('seconds')} | | | | | | |")
            continue
        cpu = f"{row['cpu_seconds']:.1f} | {row['docs_per_cpu_second']:.1f}" if "cpu_seconds" in row else " | "
        out.append(f"| {name} | {row['seconds']:.2f} | {row['docs_per_s']:.1f} | {row['docs_per_s_per_core']:.1f} "
                   f"| {row['warc_mb_per_s']:.2f} | {row['warc_mb_per_s_per_core']:.2f} | {cpu} |")
    out += ["", "## Goals", "", "| goal | value | met |", "|---|---:|---|"]
    for name, goal in report["goals"].items():
        met = {True: "yes", False: "**no**", None: "not measured"}[goal["met"]]
        out.append(f"| {name} ({goal['target']}) | {goal['value']} | {met} |")
    out += ["", "## Ratios", ""]
    out += [f"- {name}: {value}" for name, value in report["ratios"].items()]
    if report["startup"]:
        out += ["", "## sluice flow start-up (seconds)", ""]
        for key, value in report["startup"].items():
            if isinstance(value, dict):
                out.append(f"- {key}: " + "; ".join(f"{k} = {v}" for k, v in value.items()))
            else:
                out.append(f"- {key}: {value}")
    runs = report["runs"]
    out += ["", "## Counts per tool", ""]
    for key in ("flow_w1", "flow_w2"):
        if key in runs:
            r = runs[key]
            out.append(f"- {key}: {r['records_read']} records, {r['candidates']} candidates, {r['documents_out']} out; "
                       f"drops {json.dumps(r['drops'])}; problems {json.dumps(r['problems'])}")
    if "bare_sluice" in runs:
        r = runs["bare_sluice"]
        out.append(f"- bare loop: {r['candidates']} candidates, {r['documents_out']} out")
        r = runs["bare_raw"]
        out.append(f"- raw loop: {r['responses']} responses, {r['html_responses']} HTML, {r['documents_out']} out, "
                   f"{r['files_with_errors']} files ended by an exception")
    for key in ("datatrove_w1", "datatrove_w2"):
        if key in runs:
            r = runs[key]
            out.append(f"- {key} on {', '.join(report['peer_shards'])} ({report['peer_html_responses']} HTML "
                       f"responses by census): {r['docs_in']} docs read, {r['docs_extracted']} extracted, "
                       f"{r['extract_timeouts']} Trafilatura timeouts (1 s), {r['docs_out']} out; "
                       f"failed tasks: {json.dumps(r['failed_tasks']) if r['failed_tasks'] else 'none'}")
    profile = runs.get("bare_sluice_profile")
    if profile and profile.get("phases_ms_per_candidate"):
        out += ["", f"## Where extract_shard's time goes (cProfile of the bare loop, ms per candidate document; "
                f"full report in {profile['report']})", "", "| phase | ms/doc |", "|---|---:|"]
        out += [f"| {phase} | {ms} |" for phase, ms in profile["phases_ms_per_candidate"].items()]
    notes = report.get("notes")
    if notes:
        out += ["", "## Notes", ""] + [f"- {line}" for line in notes]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or None))
