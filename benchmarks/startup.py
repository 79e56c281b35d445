"""Start-up: how long `sluice run` takes to reach its first task, cold and with `sluice server` up.

    .venv/bin/python benchmarks/startup.py        # ~3 min on 2 cores

The recipe is the bench recipe with only extraction on, over one single-page Common Crawl WARC, so the run is
nearly all start-up. Each run is a fresh `sluice run` process; its first task is the earliest task run (subflow
wrappers excluded) that Prefect recorded after the process started, read from the Prefect database (cold: the
temporary server's SQLite file, after the process is gone) or from the server's API.
- cold: no server; the run starts Prefect's temporary server, a LocalCluster of one worker and MLflow on SQLite
  (the Prefect database already exists: a warm-up run made it);
- server up: `sluice server --dask-workers 1` is started first; the run uses its Prefect API, MLflow server and
  Dask scheduler (`--dask-address`).

Writes benchmarks/results/startup.json with the medians and the goals of issue 17 part 3 (first task within 5 s
with the server up, 15 s cold).
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (EXTRACT_ONLY, PYTHON, RESULTS, ROOT, WORK, bench_env, bench_recipe, goal,  # noqa: E402
                                log, write_result)
from storage.locations import shared_data_dir  # noqa: E402

ONE_PAGE = shared_data_dir() / "warc" / "commoncrawl" / "whirlwind-python" / "whirlwind.warc.gz"
FIRST_TASK = """SELECT min(start_time) FROM task_run
                WHERE start_time > ? AND id NOT IN (SELECT parent_task_run_id FROM flow_run
                                                    WHERE parent_task_run_id IS NOT NULL)"""


def write_recipe(name: str) -> Path:
    recipe = bench_recipe(WORK / "startup" / name / "store", [str(ONE_PAGE)], 1, f"startup-{name}", EXTRACT_ONLY)
    path = WORK / "startup" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(recipe.model_dump(mode="json")))
    return path


def timed_run(recipe: Path, env: dict, extra: list[str], first_task) -> dict:
    """One `sluice run`: seconds to its first task and to its exit."""
    shutil.rmtree(WORK / "startup" / recipe.stem / "store", ignore_errors=True)    # computed, never a cache hit
    began = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    started = time.perf_counter()
    done = subprocess.run([PYTHON, "-m", "cli", "run", str(recipe), *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    total = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"sluice run failed: {done.stderr[-3000:]}")
    first = first_task(began)
    return {"first_task_seconds": round((first - began).total_seconds(), 2), "process_seconds": round(total, 2)}


def cold_first_task(began: dt.datetime) -> dt.datetime:
    with sqlite3.connect(WORK / "prefect" / "prefect.db") as db:
        (found,) = db.execute(FIRST_TASK, (began.isoformat(sep=" "),)).fetchone()
    return dt.datetime.fromisoformat(found)


class Server:
    """`sluice server --dask-workers 1` on free ports, its state under _work/startup/server."""

    def __init__(self):
        from flows.processes import free_port

        self.ports = {name: free_port() for name in ("prefect", "mlflow", "dask", "dashboard")}
        self.env = bench_env() | {"SLUICE_STATE_DIR": str(WORK / "startup" / "server")}
        self.log = open(WORK / "startup" / "server.log", "w")
        self.process = subprocess.Popen(
            [PYTHON, "-m", "cli", "server", "--dask-workers", "1", "--prefect-port", str(self.ports["prefect"]),
             "--mlflow-port", str(self.ports["mlflow"]), "--dask-port", str(self.ports["dask"]),
             "--dask-dashboard-port", str(self.ports["dashboard"])],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.api = f"http://127.0.0.1:{self.ports['prefect']}/api"
        deadline = time.monotonic() + 300
        while "up; Ctrl-C stops everything" not in Path(self.log.name).read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(Path(self.log.name).read_text()[-3000:])
            time.sleep(1)

    def run_env(self) -> dict:
        return self.env | {"PREFECT_API_URL": self.api, "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{self.ports['mlflow']}"}

    def first_task(self, began: dt.datetime) -> dt.datetime:
        after = {"start_time": {"after_": began.isoformat() + "+00:00"}}
        flows = httpx.post(f"{self.api}/flow_runs/filter", json={"flow_runs": after})
        tasks = httpx.post(f"{self.api}/task_runs/filter", json={"task_runs": after})
        flows.raise_for_status(), tasks.raise_for_status()
        wrappers = {run["parent_task_run_id"] for run in flows.json()}
        first = min(dt.datetime.fromisoformat(task["start_time"].replace("Z", "+00:00"))
                    for task in tasks.json() if task["id"] not in wrappers)
        return first.replace(tzinfo=None)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=120)


def measured(label: str, runs: int, once) -> dict:
    found = []
    for attempt in range(runs):
        found.append(once())
        log(f"  {label} run {attempt + 1}: first task at {found[-1]['first_task_seconds']} s, "
            f"exit at {found[-1]['process_seconds']} s")
    return {"runs": found, "median_first_task_seconds": statistics.median(r["first_task_seconds"] for r in found),
            "median_process_seconds": statistics.median(r["process_seconds"] for r in found)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per mode (the median counts)")
    parser.add_argument("--out", type=Path, default=RESULTS / "startup.json")
    args = parser.parse_args(argv)

    cold_recipe, server_recipe = write_recipe("cold"), write_recipe("server")
    env = bench_env()
    log("cold ...")
    timed_run(cold_recipe, env, [], cold_first_task)                     # warm-up: the database, the bytecode
    cold = measured("cold", args.runs, lambda: timed_run(cold_recipe, env, [], cold_first_task))
    log("server up ...")
    server = Server()
    try:
        extra = ["--dask-address", f"tcp://127.0.0.1:{server.ports['dask']}"]
        timed_run(server_recipe, server.run_env(), extra, server.first_task)      # warm-up
        served = measured("server up", args.runs,
                          lambda: timed_run(server_recipe, server.run_env(), extra, server.first_task))
    finally:
        server.stop()
    write_result(args.out, {
        "recipe": "bench recipe, extraction only, one single-page Common Crawl WARC (whirlwind.warc.gz)",
        "cold": cold, "server_up": served,
        "goals": {"first_task_seconds_server_up": goal(served["median_first_task_seconds"], "<=", 5.0),
                  "first_task_seconds_cold": goal(cold["median_first_task_seconds"], "<=", 15.0)},
        "cpu_count": os.cpu_count()}, "startup.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
