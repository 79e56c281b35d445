"""The MLflow run a multi-run experiment (an ablation, a sweep) nests its runs under: created once, recorded in the
experiment's folder, and found again by a rerun so that it continues the same run."""
from __future__ import annotations

import json
import os

import mlflow

from tracking.params import flatten

PARENT_RECORD = "parent_run.json"
PARAMS_PER_BATCH = 100          # MLflow's limit per log_batch call


def resumable_parent_run(home: str, experiment: str, name: str, tags: dict[str, str], settings: dict,
                         config_file: tuple[str, str]) -> str:
    """The run an earlier attempt recorded in `home`, if the tracking store still has it; else a new run in
    `experiment` with `tags`, `settings` flattened into params and `config_file` (name, text) as an artifact."""
    record = os.path.join(home, PARENT_RECORD)
    client = mlflow.MlflowClient()
    if os.path.exists(record):
        with open(record) as handle:
            run_id = json.load(handle)["run_id"]
        try:
            client.get_run(run_id)
            return run_id
        except mlflow.exceptions.MlflowException:
            pass                                   # the tracking store was reset: start a new run
    run = client.create_run(mlflow.get_experiment_by_name(experiment).experiment_id, run_name=name, tags=tags)
    params = [mlflow.entities.Param(key, value) for key, value in flatten("", settings).items()]
    for offset in range(0, len(params), PARAMS_PER_BATCH):
        client.log_batch(run.info.run_id, params=params[offset:offset + PARAMS_PER_BATCH])
    client.log_text(run.info.run_id, config_file[1], config_file[0])
    os.makedirs(home, exist_ok=True)
    with open(record, "w") as handle:
        json.dump({"run_id": run.info.run_id}, handle)
    return run.info.run_id
