"""Data lineage in MLflow's own terms: a training run's inputs as MLflow datasets (name, source location, digest)
with their context (`training`, `evaluation`), so MLflow's run table shows which data made which model."""
from __future__ import annotations

import warnings
from typing import NamedTuple


class RunDataset(NamedTuple):
    name: str
    location: str     # where the data is (a manifest or a file)
    digest: str       # its content digest
    context: str      # "training" or "evaluation"


def log_datasets(run_id: str, datasets: list[RunDataset]) -> None:
    import mlflow
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    inputs = [DatasetInput(MetaDataset(_source(data.location), name=data.name,
                                       digest=data.digest[:36])._to_mlflow_entity(),
                           tags=[InputTag("mlflow.data.context", data.context)]) for data in datasets]
    mlflow.MlflowClient().log_inputs(run_id, datasets=inputs)


def _source(location: str):
    """MLflow registers the local artifact source for both the bare-path and the file:// schemes, and warns that
    a local path matches two (identical) sources."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The specified dataset source can be interpreted")
        return resolve_dataset_source(location)
