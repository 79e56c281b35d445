"""A run copied from one tracking store into a run of another: params, tags and every metric's history. For a
training whose checkpoints were tracked elsewhere (the CLI's store, then a server's): its figures follow it."""
from __future__ import annotations

import os

PER_BATCH = {"params": 100, "tags": 100, "metrics": 1000}     # MLflow's log_batch limits


def copy_run(source_uri: str | None, source_run_id: str, client, run_id: str) -> bool:
    """Copy the source run into `run_id` of `client`'s store; False when the source store cannot be read."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    if source_uri is None or (source_uri.startswith("sqlite:///")
                              and not os.path.exists(source_uri.removeprefix("sqlite:///"))):
        return False             # (MLflow would make an empty SQLite store where the old one was)
    source = MlflowClient(source_uri)
    try:
        run = source.get_run(source_run_id)
        metrics = [Metric(key, point.value, point.timestamp, point.step) for key in run.data.metrics
                   for point in source.get_metric_history(source_run_id, key)]
    except (MlflowException, OSError):
        return False
    items = {"params": [Param(key, value) for key, value in run.data.params.items()],
             "tags": [RunTag(key, value) for key, value in run.data.tags.items()
                      if not key.startswith("mlflow.") or key == "mlflow.note.content"],
             "metrics": metrics}
    for kind, found in items.items():
        for start in range(0, len(found), PER_BATCH[kind]):
            client.log_batch(run_id, **{kind: found[start:start + PER_BATCH[kind]]})
    return True
