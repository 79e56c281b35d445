"""Where runs are tracked: the tracking URI, experiments with their artifact location, and browser URLs of runs
and artifacts when a tracking server serves them."""
from __future__ import annotations

import os
from urllib.parse import quote

from storage.locations import state_dir


def tracking_uri(configured: str | None) -> str:
    return configured or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{state_dir() / 'mlflow.db'}"


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
    return (state_dir() / "mlartifacts" / experiment).resolve().as_uri() if uri.startswith("sqlite:") else None


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
