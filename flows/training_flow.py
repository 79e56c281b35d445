"""The training flow: torchrun as a subprocess in its own process group, rank 0's output streamed to the
Prefect logger, every rank killed on cancel, crash or timeout (no orphaned trainer), and a retry that resumes
from the latest checkpoint (the trainer always does)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import yaml
from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from configs.training import TrainingConfig
from training.metrics import RUN_RECORD

ROOT = Path(__file__).resolve().parents[1]
_RUNNING: dict[str, subprocess.Popen] = {}     # flow run id -> its torchrun, for the cancel / crash hooks


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def torchrun_command(config_path: str, processes: int) -> list[str]:
    """torchrun on this machine with `processes` ranks on a free loopback port, running training.train."""
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(processes),
            "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "-m", "training.train", config_path]


def kill_group(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the whole process group (torchrun and its ranks), SIGKILL what is left after `grace_s`."""
    if process.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _kill_on_hook(flow, run, state) -> None:
    process = _RUNNING.pop(str(run.id), None)
    if process is not None:
        kill_group(process)


@flow(name="sluice-train", log_prints=True, retries=1, retry_delay_seconds=2,
      on_cancellation=[_kill_on_hook], on_crashed=[_kill_on_hook])
def training_flow(config: TrainingConfig) -> dict:
    """Train with `config.hardware.data_parallel` ranks on this machine; returns the last step's figures."""
    logger = get_run_logger()
    os.makedirs(config.checkpoint.dir, exist_ok=True)
    config_path = os.path.join(config.checkpoint.dir, "train.yaml")
    with open(config_path, "w") as handle:
        yaml.safe_dump(config.model_dump(mode="json"), handle, sort_keys=False)
    command = torchrun_command(config_path, config.hardware.data_parallel)
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    _RUNNING[str(flow_run.id)] = process
    timer = threading.Timer(config.timeout_s, kill_group, args=(process,)) if config.timeout_s else None
    last: dict = {}
    try:
        if timer:
            timer.start()
        for line in process.stdout:
            logger.info(line.rstrip())
            if line.startswith("{"):
                record = json.loads(line)
                last.update({key: value for key, value in record.items() if key != "event"})
        process.wait()
    finally:
        if timer:
            timer.cancel()
        kill_group(process)
        _RUNNING.pop(str(flow_run.id), None)
    if process.returncode != 0:
        raise RuntimeError(f"torchrun exited with {process.returncode} (see the log above); a retry resumes from "
                           f"the latest checkpoint in {config.checkpoint.dir}")
    with open(os.path.join(config.checkpoint.dir, RUN_RECORD)) as handle:
        run_id = json.load(handle)["run_id"]
    return {"mlflow_run_id": run_id, "checkpoint_dir": config.checkpoint.dir, **last}
