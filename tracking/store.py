"""Where runs are tracked: the tracking URI, experiments with their artifact location, and browser URLs of runs
and artifacts when a tracking server serves them."""
from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

import psutil

from storage.locations import state_dir

SERVER_RECORD = "server.json"      # in the state dir while a single-host `sluice server` runs: its pid and URLs


def tracking_uri(configured: str | None) -> str:
    """The recipe's store, else MLFLOW_TRACKING_URI, else a running `sluice server`'s MLflow (which serves this
    machine's store), else this machine's store itself: the CLI's runs and the server's land in one store."""
    return configured or os.environ.get("MLFLOW_TRACKING_URI") or running_server_uri() or local_tracking_uri()


def local_tracking_uri() -> str:
    """The tracking store on this machine, which the CLI and a single-host `sluice server` share."""
    return f"sqlite:///{state_dir() / 'mlflow.db'}"


def local_artifact_root() -> Path:
    """Where that store's artifacts live: a folder per experiment."""
    return state_dir() / "mlartifacts"


def running_server_uri() -> str | None:
    """The MLflow URL of the `sluice server` running on this state dir, if one is."""
    try:
        record = json.loads((state_dir() / SERVER_RECORD).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return record["mlflow_url"] if psutil.pid_exists(record["pid"]) else None


# MLflow's UI opens an experiment in its model-training view (runs, datasets, logged models), not the GenAI one.
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
MODEL_TRAINING_VIEW = "workflowType=machine_learning"


def use_experiment(name: str, configured_uri: str | None) -> str:
    """Point MLflow at the tracking store and experiment; local stores keep artifacts under the state dir."""
    import mlflow

    uri = tracking_uri(configured_uri)
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(name) is None:
        mlflow.create_experiment(name, artifact_location=artifact_location(name, uri), tags=EXPERIMENT_TAGS)
    mlflow.set_experiment(name)
    return uri


def artifact_location(experiment: str, uri: str) -> str | None:
    """Local (SQLite) stores keep artifacts under the state dir, not in `./mlruns` of whatever the working
    directory is; a tracking server decides for itself (None)."""
    return (local_artifact_root() / experiment).resolve().as_uri() if uri.startswith("sqlite:") else None


def served(uri: str) -> bool:
    """A tracking server (its UI and artifact proxy reachable over HTTP), rather than a local store."""
    return uri.startswith(("http://", "https://"))


def run_page_url(uri: str, experiment_id: str, run_id: str) -> str | None:
    """The run's page in the UI's model-training view (MLflow opens runs in its GenAI view unless told)."""
    return f"{uri.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}?{MODEL_TRAINING_VIEW}" if served(uri) \
        else None


def artifact_url(uri: str, run_id: str, path: str) -> str | None:
    """A browser URL of a run's artifact, served by the tracking server's artifact proxy."""
    return f"{uri.rstrip('/')}/get-artifact?path={quote(path)}&run_uuid={run_id}" if served(uri) else None
