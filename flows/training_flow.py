"""The training flow: torchrun as a subprocess in its own process group, rank 0's output streamed to the
Prefect logger, every rank killed on cancel, crash or timeout (no orphaned trainer), and a retry that resumes
from the latest checkpoint (the trainer always does)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import yaml
from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from configs.training import TrainingConfig
from flows.processes import kill_process_group
from tracking.run_logger import RUN_RECORD
from tracking.store import tracking_uri

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER_RECORD = "launcher.json"             # beside the checkpoints: which process group runs the trainer
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
    if process.poll() is None:
        kill_process_group(process.pid, grace_s, reap=process.poll)


def _kill_on_hook(flow, flow_run, state) -> None:
    """On cancel or crash. In the flow-run process the trainer is in `_RUNNING`; when the hook runs in another
    process (a deployment's runner runs it after killing the flow-run process), the launcher record beside the
    checkpoints names the process group, and it is killed if it is still that run's torchrun."""
    process = _RUNNING.pop(str(flow_run.id), None)
    if process is not None:
        kill_group(process)
        return
    checkpoint_dir = ((flow_run.parameters or {}).get("config") or {}).get("checkpoint", {}).get("dir")
    record = os.path.join(checkpoint_dir, LAUNCHER_RECORD) if checkpoint_dir else None
    if record and os.path.exists(record):
        with open(record) as handle:
            launched = json.load(handle)
        if launched["flow_run_id"] == str(flow_run.id) and _is_torchrun(launched["pgid"]):
            kill_process_group(launched["pgid"])


def _is_torchrun(pid: int) -> bool:
    try:
        return "torch.distributed.run" in " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return False


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
    with open(os.path.join(config.checkpoint.dir, LAUNCHER_RECORD), "w") as handle:
        json.dump({"flow_run_id": str(flow_run.id), "pgid": process.pid}, handle)
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
    if "loss" not in last:      # nothing left to train: the run's final figures are in MLflow
        last |= _final_metrics(config, run_id)
    model_uri = _logged_model(config, run_id)
    logger.info("trained model: %s", model_uri or "not logged (no tokenizer)")
    return {"mlflow_run_id": run_id, "checkpoint_dir": config.checkpoint.dir, "model_uri": model_uri, **last}


def _final_metrics(config: TrainingConfig, run_id: str) -> dict:
    import mlflow

    metrics = mlflow.MlflowClient(tracking_uri(config.mlflow.tracking_uri)).get_run(run_id).data.metrics
    return {name: metrics[name] for name in ("loss", "val_loss", "val_bpb", "suite_bpb/macro") if name in metrics}


def _logged_model(config: TrainingConfig, run_id: str) -> str | None:
    """The run's final checkpoint as an MLflow logged model (once per run: a rerun finds it), when the run has a
    tokenizer to make it usable on text."""
    import mlflow

    from training.checkpoint import latest_checkpoint
    from training.logged_model import LOGGED_MODEL_NAME, log_language_model

    if not config.data.tokenizer:
        return None
    mlflow.set_tracking_uri(tracking_uri(config.mlflow.tracking_uri))
    client = mlflow.MlflowClient()
    experiment_id = client.get_run(run_id).info.experiment_id
    logged = mlflow.search_logged_models(experiment_ids=[experiment_id], output_format="list",
                                         filter_string=f"source_run_id = '{run_id}' AND name = '{LOGGED_MODEL_NAME}'")
    if logged:
        return f"models:/{logged[0].model_id}"
    tags = {key: value for key, value in config.mlflow.tags.items() if key.endswith("_digest")}
    return log_language_model(client, run_id, latest_checkpoint(config.checkpoint.dir), config.data.tokenizer, tags,
                              config.mlflow.register_model)
