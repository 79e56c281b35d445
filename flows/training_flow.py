"""The training flow: torchrun as a subprocess in its own process group (or one per node, through the Dask
cluster: `flows.training_nodes`), rank 0's output streamed to the Prefect logger, every rank killed on cancel,
crash or timeout (no orphaned trainer), and a retry that resumes from the latest checkpoint (the trainer always
does)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from collections.abc import Callable

import psutil
import yaml
from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from configs.training import TrainingConfig
from flows.doctor import doctor
from flows import trainer_pool
from flows.processes import kill_process_group
from flows.torchrun import follow_records, kill_group, start_trainer, torchrun_command
from flows.training_nodes import dask_address, set_stop, stop_event_name, train_on_nodes
from tracking.mlflow_writer import RUN_RECORD, WRITER_ENV, HostedWriter
from tracking.store import tracking_uri

LAUNCHER_RECORD = "launcher.json"             # beside the checkpoints: what runs the trainer, for the hooks
FINISHED_RECORD = "finished.json"             # beside the checkpoints: the config a completed training ran
_RUNNING: dict[str, Callable[[], None]] = {}   # flow run id -> how to stop its trainer, for the cancel / crash hooks


def _kill_on_hook(flow, flow_run, state) -> None:
    """On cancel or crash. In the flow-run process the trainer's stop is in `_RUNNING`; when the hook runs in
    another process (a deployment's runner runs it after killing the flow-run process), the launcher record
    beside the checkpoints says what to stop: the process group, if it is still that run's torchrun, or the
    nodes' stop event on the Dask cluster."""
    stop = _RUNNING.pop(str(flow_run.id), None)
    if stop is not None:
        stop()
        return
    checkpoint_dir = ((flow_run.parameters or {}).get("config") or {}).get("checkpoint", {}).get("dir")
    record = os.path.join(checkpoint_dir, LAUNCHER_RECORD) if checkpoint_dir else None
    if record and os.path.exists(record):
        with open(record) as handle:
            launched = json.load(handle)
        if launched["flow_run_id"] != str(flow_run.id):
            return
        if "stop_event" in launched:
            set_stop(launched["dask_address"], launched["stop_event"])
        elif _is_torchrun(launched["pgid"]):
            kill_process_group(launched["pgid"])


def _is_torchrun(pid: int) -> bool:
    try:
        return "torch.distributed.run" in " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return False


@flow(name="sluice-train", log_prints=True, retries=1, retry_delay_seconds=2,
      on_cancellation=[_kill_on_hook], on_crashed=[_kill_on_hook])
def training_flow(config: TrainingConfig) -> dict:
    """Train with `config.hardware.ranks` (pipeline x data x tensor parallel) on this machine, or spread over
    `hardware.nodes` Dask workers (`flows.training_nodes`); returns the last step's figures."""
    logger = get_run_logger()
    os.makedirs(config.checkpoint.dir, exist_ok=True)
    config_path = os.path.join(config.checkpoint.dir, "train.yaml")
    with open(config_path, "w") as handle:
        yaml.safe_dump(config.model_dump(mode="json"), handle, sort_keys=False)
    this_run = str(flow_run.id)
    try:
        if final := _finished_here(config):
            from training.checkpoint import checkpoint_step

            logger.info("already trained to its end in %s with this config, and its MLflow run is finished: not "
                        "launched again", config.checkpoint.dir)
            last = {"checkpoint": final, "step": checkpoint_step(final)}      # as a launch that resumes at the end
        elif config.hardware.nodes > 1:
            address, event = dask_address(config), stop_event_name(this_run)
            _launched(config, {"dask_address": address, "stop_event": event}, lambda: set_stop(address, event))
            last = train_on_nodes(config, config_path, this_run, logger.info)
        else:
            last = _train_here(config, config_path, logger.info)
        _record_finished(config)
    except BaseException as error:      # a cancel or termination signal too: the run is never left RUNNING
        _mark_ended(config, "FAILED" if isinstance(error, Exception) else "KILLED")
        raise
    finally:
        _RUNNING.pop(this_run, None)
    with open(os.path.join(config.checkpoint.dir, RUN_RECORD)) as handle:
        run_id = json.load(handle)["run_id"]
    if "loss" not in last:      # nothing left to train: the run's final figures are in MLflow
        last |= _final_metrics(config, run_id)
    model_uri = _logged_model(config, run_id) if config.mlflow.log_model else None
    logger.info("trained model: %s", model_uri or "not logged (no tokenizer, or mlflow.log_model is off)")
    findings = doctor(run_id, tracking_uri(config.mlflow.tracking_uri))["findings"]
    for finding in findings:
        logger.warning("doctor: %s: %s; fix: %s", finding["check"], finding["seen"], finding["fix"])
    return {"mlflow_run_id": run_id, "checkpoint_dir": config.checkpoint.dir, "model_uri": model_uri,
            "doctor_findings": [finding["check"] for finding in findings], **last}


def _config_digest(config: TrainingConfig) -> str:
    """What the trained weights depend on: the whole config but its MLflow settings (a resumed run keeps the
    MLflow run it started with, whatever they say now)."""
    settings = config.model_dump(mode="json", exclude={"mlflow"})
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def _record_finished(config: TrainingConfig) -> None:
    """The config a training completed with and its final checkpoint."""
    from training.checkpoint import latest_checkpoint

    final = latest_checkpoint(config.checkpoint.dir)
    with open(os.path.join(config.checkpoint.dir, FINISHED_RECORD), "w") as handle:
        json.dump({"config": _config_digest(config), "checkpoint": final and os.path.basename(final)}, handle)


def _finished_here(config: TrainingConfig) -> str | None:
    """The final checkpoint, if this config's training completed in its checkpoint folder and its MLflow run, in
    this store, is finished: a rerun has nothing to train, and launching torchrun (~10 s) would only log the final
    checkpoint again. A run tracked in another store, or not finished there, is launched (and logged here)."""
    import mlflow

    from training.checkpoint import latest_checkpoint

    finished, record = (os.path.join(config.checkpoint.dir, name) for name in (FINISHED_RECORD, RUN_RECORD))
    final = latest_checkpoint(config.checkpoint.dir)
    if not (os.path.exists(finished) and os.path.exists(record) and final):
        return None
    with open(finished) as handle:
        recorded = json.load(handle)
    if recorded != {"config": _config_digest(config), "checkpoint": os.path.basename(final)}:
        os.remove(finished)          # trained on (or another config): this launch records it again if it completes
        return None
    with open(record) as handle:
        run_id = json.load(handle)["run_id"]
    try:
        run = mlflow.MlflowClient(tracking_uri(config.mlflow.tracking_uri)).get_run(run_id)
    except mlflow.exceptions.MlflowException:
        return None
    return final if run.info.status == "FINISHED" else None


def _mark_ended(config: TrainingConfig, status: str) -> None:
    """The attempt's MLflow run, if the trainer got as far as starting one, FAILED (or KILLED, on cancel) rather than
    RUNNING for ever (a rank killed by a signal never finishes it); a retry's writer sets it RUNNING again and
    continues it."""
    import mlflow

    record = os.path.join(config.checkpoint.dir, RUN_RECORD)
    if not os.path.exists(record):
        return
    with open(record) as handle:
        run_id = json.load(handle)["run_id"]
    client = mlflow.MlflowClient(tracking_uri(config.mlflow.tracking_uri))
    try:
        if client.get_run(run_id).info.status == "RUNNING":
            client.set_terminated(run_id, status=status)
    except mlflow.exceptions.MlflowException as error:      # the training's own error is the one to raise
        get_run_logger().warning("could not mark MLflow run %s %s: %s", run_id, status, error)


def _launched(config: TrainingConfig, record: dict, stop: Callable[[], None]) -> None:
    """Registers how to stop this run's trainer, here and in the launcher record for a hook in another process."""
    _RUNNING[str(flow_run.id)] = stop
    with open(os.path.join(config.checkpoint.dir, LAUNCHER_RECORD), "w") as handle:
        json.dump({"flow_run_id": str(flow_run.id)} | record, handle)


def _train_here(config: TrainingConfig, config_path: str, log: Callable[[str], None]) -> dict:
    """torchrun with every rank on this machine (a warm one inside `warm_trainers()`: flows/trainer_pool.py); its
    output streamed to `log`, its MLflow run written from here (this process has MLflow loaded: rank 0 would spend
    ~4 s setting it up while the other ranks wait)."""
    writer = HostedWriter()
    trainer = _trainer(config.hardware.ranks)
    if trainer is None:
        process = start_trainer(torchrun_command(config_path, config.hardware.ranks), subprocess.PIPE,
                                env={WRITER_ENV: writer.address})
        lines = process.stdout
    else:
        process, lines = trainer.process, trainer.submit(config_path, {WRITER_ENV: writer.address})
    _launched(config, {"pgid": process.pid}, lambda: kill_group(process))
    timed_out = threading.Event()

    def time_out() -> None:
        timed_out.set()
        kill_group(process)

    timer = threading.Timer(config.timeout_s, time_out) if config.timeout_s else None
    try:
        if timer:
            timer.start()
        last = follow_records(lines, log)
        returncode = 0 if trainer is not None and trainer.done else process.wait()
    finally:
        if timer:
            timer.cancel()
        if trainer is None:
            kill_group(process)
        elif not trainer.done:
            trainer_pool.active().drop(trainer)
        writer.close()
    if returncode != 0:
        why = (f"was stopped after timeout_s = {config.timeout_s:g} s" if timed_out.is_set()
               else f"exited with {returncode} (see the log above)")
        raise RuntimeError(f"torchrun {why}; a retry resumes from the latest checkpoint in {config.checkpoint.dir}")
    return last


def _trainer(ranks: int) -> trainer_pool.WarmTrainer | None:
    """The warm trainer of `ranks` ranks, inside `warm_trainers()`."""
    pool = trainer_pool.active()
    return pool.trainer(ranks) if pool is not None else None


def _final_metrics(config: TrainingConfig, run_id: str) -> dict:
    import mlflow

    metrics = mlflow.MlflowClient(tracking_uri(config.mlflow.tracking_uri)).get_run(run_id).data.metrics
    return {name: metrics[name] for name in ("loss", "val_loss", "val_bpb", "suite_bpb/macro") if name in metrics}


def _logged_model(config: TrainingConfig, run_id: str) -> str | None:
    """The run's final checkpoint as an MLflow logged model (once per run: a rerun finds it), when the run has a
    tokenizer to make it usable on text."""
    import mlflow

    from training.checkpoint import latest_checkpoint
    from flows.logged_model import LOGGED_MODEL_NAME, log_language_model

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
