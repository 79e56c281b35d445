"""The training runs an experiment's parent run (an ablation, a sweep) is made of, and the role each plays there.

A finished training run is reused by every later experiment that needs the same training (same config, data and
tokenizer: the same checkpoint folder), whatever its parent: an ablation given one more seed reuses the earlier
seeds' runs, and two ablations share the runs of a variant they have in common. MLflow nests a run under one parent
only (`mlflow.parentRunId`: the experiment that trained it), so membership is a tag per parent,
`sluice.member_of.<parent run id>`, whose value is the run's role there (JSON, such as variant and seed). A run
joining a role that another run of the parent holds takes it over: a (variant, seed) trained again after a change
replaces the old run in the comparison instead of sitting beside it.
"""
from __future__ import annotations

import json

import mlflow
from mlflow.entities import Run

MEMBER_TAG = "sluice.member_of."


def join(parent_id: str, run_id: str, role: dict) -> None:
    """Make `run_id` the parent's run in `role`, taking the role from any other run that held it."""
    client = mlflow.MlflowClient()
    try:
        client.get_run(run_id)
    except mlflow.exceptions.MlflowException as error:
        raise RuntimeError(f"MLflow run {run_id}, recorded as this training's run, is not in the tracking store "
                           f"{mlflow.get_tracking_uri()} (was the store reset?): delete the training's result file "
                           f"beside its checkpoints to train it again") from error
    value = json.dumps(role, sort_keys=True)
    for run, held in members(parent_id):
        if held == role and run.info.run_id != run_id:
            client.delete_tag(run.info.run_id, MEMBER_TAG + parent_id)
    client.set_tag(run_id, MEMBER_TAG + parent_id, value)


def members(parent_id: str) -> list[tuple[Run, dict]]:
    """(run, role) for every run of the parent, in any experiment."""
    client = mlflow.MlflowClient()
    experiments = [experiment.experiment_id for experiment in mlflow.search_experiments()]   # all pages
    key = MEMBER_TAG + parent_id
    runs = client.search_runs(experiments, filter_string=f"tags.`{key}` LIKE '%'", max_results=10_000)
    return [(run, json.loads(run.data.tags[key])) for run in runs]
