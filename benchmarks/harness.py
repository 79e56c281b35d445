"""What every benchmark shares: where it works, the environment its children run in, the bench corpus and its
cached extraction, a timed child process with a process-tree CPU and memory poller, the bench recipe, ratios and
goals, and the result file.

Everything a benchmark creates lives under benchmarks/_work/ (gitignored), never in the project's .state/.
A benchmark's parent process only orchestrates: each timed side runs in a fresh child (`run_child`), which prints
its figures as JSON lines on stdout.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
import zlib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from configs.base import merged  # noqa: E402
from storage.fs import expand_inputs  # noqa: E402
from storage.locations import shared_data_dir  # noqa: E402

BENCH = ROOT / "benchmarks"
WORK = BENCH / "_work"
RESULTS = BENCH / "results"
PYTHON = str(ROOT / ".venv" / "bin" / "python")
PEER_PYTHON = str(WORK / "venv-peer" / "bin" / "python")
BENCH_CORPUS = WORK / "corpus-bench"
EXTRACTION_STORE = WORK / "dedup-bench" / "extract-store"
# the later stages switched off: a recipe that extracts only
EXTRACT_ONLY = {"dedup": {"enabled": False}, "quality": {"enabled": False}, "domains": {"enabled": False},
                "tokenizer": {"enabled": False}}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_env() -> dict[str, str]:
    """The environment of every child: embedded services' state under benchmarks/_work, bytecode cached there."""
    env = dict(os.environ)
    env.update({
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "1",
        "PREFECT_HOME": str(WORK / "prefect"),
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
        "MLFLOW_TRACKING_URI": f"sqlite:///{WORK / 'mlflow.db'}",
        "SLUICE_STATE_DIR": str(WORK / "state"),
        "SLUICE_DATA_DIR": str(shared_data_dir()),
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
        # This machine sets PYTHONDONTWRITEBYTECODE; the project venv is compiled at set-up, the peer venv is not,
        # so both sides get a bytecode cache outside the venvs.
        "PYTHONPYCACHEPREFIX": str(WORK / "pycache"),
    })
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PREFECT_API_URL", None)  # an ephemeral server of our own, as `sluice run` starts
    return env


def input_files(folder: Path) -> list[Path]:
    """The WARC/WET/ARC files under a folder, found as the pipeline finds them."""
    return [Path(url) for url in expand_inputs([str(folder)])]


def ensure_corpus(requested: Path | None = None) -> tuple[Path, str]:
    """The corpus folder (warc/ and labels.jsonl) and how it was made: the given one, or the bench corpus."""
    if requested:
        return requested, f"given: {requested}"
    return generated_corpus(BENCH_CORPUS, "bench", 0)


def generated_corpus(folder: Path, size: str, seed: int) -> tuple[Path, str]:
    """`sluice corpus` into `folder`, built once and built again when the generator has a new version since (a
    corpus of the old generator is not the one the command makes now); with how it was made."""
    from dev.corpus.generate import GENERATOR_VERSION

    summary = folder / "corpus.json"
    if not summary.exists() or json.loads(summary.read_text()).get("generator_version") != GENERATOR_VERSION:
        log(f"building the {size} corpus of seed {seed} in {folder} ...")
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([str(ROOT / ".venv" / "bin" / "sluice"), "corpus", "--size", size, "--seed", str(seed),
                        "--out", str(folder)], cwd=ROOT, env=bench_env(), check=True)
    return folder, f"sluice corpus --size {size} --seed {seed} (generator {GENERATOR_VERSION})"


def ensure_peer() -> None:
    """datatrove in its own venv (benchmarks/setup_peer.sh; a no-op when it is up to date)."""
    subprocess.run(["bash", str(BENCH / "setup_peer.sh")], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


class ProcessTreeSampler:
    """CPU seconds (user + system) of a process and all its descendants, and peak resident memory of the largest
    single process and of the whole tree, polled with psutil every `interval` seconds.

    RUSAGE_CHILDREN misses processes nobody waits for (Dask's workers, datatrove's forkserver pool), hence the
    polling; each process keeps its last value, so a process's last `interval` before it exits can be missed.
    """

    def __init__(self, pid: int, interval: float = 0.5):
        import psutil

        self._psutil, self._root, self._interval = psutil, psutil.Process(pid), interval
        self._cpu: dict[tuple[int, float], float] = {}
        self.peak_root_rss = 0          # the child itself (a flow process)
        self.peak_descendant_rss = 0    # the largest process it started (a Dask worker, a trainer rank)
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
                self._cpu[key] = max(self._cpu.get(key, 0.0), times.user + times.system)
                rss = proc.memory_info().rss
                tree_rss += rss
                if proc.pid == self._root.pid:
                    self.peak_root_rss = max(self.peak_root_rss, rss)
                else:
                    self.peak_descendant_rss = max(self.peak_descendant_rss, rss)
        self.peak_tree_rss = max(self.peak_tree_rss, tree_rss)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._poll()

    def stop(self) -> dict:
        self._poll()
        self._stop.set()
        self._thread.join()
        return {"process_tree_cpu_seconds": round(sum(self._cpu.values()), 2), "processes_seen": len(self._cpu),
                "peak_process_rss_mb": round(max(self.peak_root_rss, self.peak_descendant_rss) / 2**20, 1),
                "peak_root_rss_mb": round(self.peak_root_rss / 2**20, 1),
                "peak_descendant_rss_mb": round(self.peak_descendant_rss / 2**20, 1),
                "peak_tree_rss_mb": round(self.peak_tree_rss / 2**20, 1)}


def run_child(command: list[str], label: str, timeout: float = 3600, env: dict | None = None,
              prints_json: bool = True) -> tuple[list[dict], dict]:
    """Run one timed side in a fresh process; return the JSON lines it printed (it must print one when
    `prints_json`) and what it cost (wall seconds, process-tree CPU seconds, peak RSS, the load average around it).
    Its stdout and stderr go to _work/logs/."""
    log(f"{label} ...")
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, env=env or bench_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    sampler = ProcessTreeSampler(proc.pid)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    cost = {"process_seconds": round(time.perf_counter() - started, 3), **sampler.stop(),
            "loadavg_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    logs = WORK / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    safe = label.replace(" ", "_").replace("/", "_")
    (logs / f"{safe}.stdout.log").write_text(stdout)
    (logs / f"{safe}.stderr.log").write_text(stderr)
    lines = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                lines.append(json.loads(line))
    if proc.returncode != 0 or (prints_json and not lines):
        raise RuntimeError(f"{label} failed (rc {proc.returncode}); stderr tail:\n{stderr[-3000:]}")
    log(f"  {label}: {cost['process_seconds']:.1f} s wall, {cost['process_tree_cpu_seconds']:.1f} s CPU, "
        f"load {cost['loadavg_1min_before_after']}")
    return lines, cost


def bench_recipe(store: Path | str, inputs: list[str], workers: int, experiment: str, overrides: dict | None = None):
    """configs/demo.yaml over `inputs`, with its own store, `workers` local Dask workers, the MLflow database of
    bench_env() and `overrides` laid over it (configs.base.merged: `{"enabled": False}` switches a stage off)."""
    from configs.schema import load_recipe, parse_recipe

    raw = load_recipe(ROOT / "configs" / "demo.yaml").model_dump(mode="json")
    raw = merged(raw, {"name": f"bench-{experiment}", "store": str(store),
                       "input": {"paths": [str(Path(p).resolve()) for p in inputs], "source": "bench"},
                       "dask": {"n_workers": workers, "address": None},
                       "mlflow": {"experiment": f"sluice-bench-{experiment}", "tracking_uri": None}})
    return parse_recipe(merged(raw, overrides or {}), origin=f"benchmark recipe ({experiment})")


def extraction_child(corpus: str, store: str) -> int:
    """(In a child.) Extract the corpus with the bench recipe and print the extract stage's result."""
    from flows.curation import curation_flow

    recipe = bench_recipe(store, [corpus], 2, "extraction", EXTRACT_ONLY)
    print(json.dumps(curation_flow(recipe)["stages"]["extract"]))
    return 0


def bench_extraction(corpus: Path) -> tuple[dict, dict]:
    """The extract stage's result for the corpus: computed once, then found in its store (a cache hit)."""
    EXTRACTION_STORE.parent.mkdir(parents=True, exist_ok=True)
    lines, cost = run_child([PYTHON, __file__, "_extract", str(corpus / "warc"), str(EXTRACTION_STORE)],
                            "extraction (cached)")
    return lines[-1], cost


def gzip_is_complete(path: Path) -> bool:
    """False when a multi-member gzip file ends inside a member (a truncated tail)."""
    try:
        with gzip.open(path, "rb") as handle:
            while handle.read(1 << 22):
                pass
        return True
    except (EOFError, OSError, zlib.error):
        return False


def peer_files(files: list[Path], count: int) -> list[Path]:
    """The .warc.gz files datatrove extracts (it is several times slower per document): the truncated one(s) first,
    to see how it takes them, then the first clean ones; all of them when `count` is 0 or more than there are."""
    gz = [path for path in files if path.name.endswith(".warc.gz")]
    if count <= 0 or count >= len(gz):
        return gz
    damaged = [path for path in gz if not gzip_is_complete(path)]
    clean = [path for path in gz if path not in damaged]
    return sorted((damaged[:max(1, count // 2)] + clean)[:count])


def linked_folder(files: list[Path]) -> Path:
    """A folder of links to `files`: datatrove's WarcReader reads a folder."""
    folder = WORK / "peer-input"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for path in files:
        (folder / path.name).symlink_to(path.resolve())
    return folder


def peer_extraction(folder: Path, workers: int, label: str, options: tuple[str, ...] = ()) -> dict:
    """datatrove's extraction (benchmarks/peer_datatrove.py, the peer venv) over a folder, timed in a fresh process:
    its figures and what it cost."""
    lines, cost = run_child([PEER_PYTHON, str(BENCH / "peer_datatrove.py"), str(folder), "--workers", str(workers),
                             "--logging-dir", str(WORK / "datatrove-logs" / label), *options], f"datatrove {label}")
    return lines[-1] | cost


def ratio(numerator: float | None, denominator: float | None, digits: int = 2) -> float | None:
    return round(numerator / denominator, digits) if numerator and denominator else None


def goal(value: float | None, op: str, target: float) -> dict:
    """A goal as the results record it: the value, the target (`>= 1.8`) and whether it was met (None: not measured)."""
    met = None if value is None else (value >= target if op == ">=" else value <= target)
    return {"value": value, "target": f"{op} {target}", "met": met}


def machine_info() -> dict:
    cpu = ""
    with contextlib.suppress(OSError):
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "")
    memory = ""
    with contextlib.suppress(OSError):
        memory = Path("/proc/meminfo").read_text().splitlines()[0].split(":", 1)[1].strip()
    versions = {}
    for name in ("prefect", "dask", "distributed", "fastwarc", "resiliparse", "datasketch", "sentencepiece",
                 "pyarrow", "mlflow", "torch"):
        with contextlib.suppress(PackageNotFoundError):
            versions[name] = version(name)
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": memory, "python": sys.version.split()[0],
            "versions": versions}


def command_line(script: str, argv: list[str]) -> str:
    """How a result was produced, as a command to paste."""
    return "cd /work/main && " + shlex.join([".venv/bin/python", f"benchmarks/{script}", *argv])


def now() -> str:
    return dt.datetime.now().isoformat(timespec="minutes")


def export_tree(revision: str, tree: Path) -> tuple[Path, str]:
    """The files of `revision` exported to `tree` (emptied first), and the commit it names."""
    subprocess.run(["rm", "-rf", str(tree)], check=True)
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    commit = subprocess.run(["git", "rev-parse", revision], cwd=ROOT, capture_output=True, text=True, check=True)
    return tree, commit.stdout.strip()


def git_commit() -> tuple[str, bool]:
    """The commit measured, and whether the working tree differed from it (tracked files)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    # the result files themselves (a chart written beside the JSON) do not make the measured code dirty
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return head, bool(dirty)


PRODUCT = ("flows", "tasks", "training", "tracking", "storage", "configs", "dev")


def measured_code_version() -> str:
    """The code version of the project modules this benchmark loaded, derived as a stage's is
    (`storage/code_version.py`: their sources, what they import, the library versions): two results with the same
    version measured the same code, whatever else the commit changed."""
    from storage.code_version import code_version

    loaded = sorted(name for name, module in list(sys.modules.items())
                    if name.split(".")[0] in PRODUCT and getattr(module, "__file__", None))
    return code_version(*loaded)


def write_result(path: Path, result: dict, script: str, argv: list[str], machine: dict | None = None) -> dict:
    """The result file: the command that produced it, the date, the commit, whether the tree was dirty and the code
    version first, then the figures, then the machine (this one, unless the figures were measured elsewhere and
    `machine` says where). Returns what it wrote."""
    commit, dirty = git_commit()
    document = {"command": command_line(script, argv), "date": now(), "commit": commit, "dirty": dirty,
                "code_version": measured_code_version(), **result, "machine": machine or machine_info()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"wrote {path}")
    # benchmarks/README.md's tables render the result files; a result recorded without them fails the suite
    subprocess.run([sys.executable, str(Path(__file__).with_name("tables.py"))], check=False)
    return document


if __name__ == "__main__" and sys.argv[1:2] == ["_extract"]:
    sys.exit(extraction_child(*sys.argv[2:4]))
