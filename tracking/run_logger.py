"""MLflow on rank 0, batched: metrics are buffered and sent with `log_batch` (per-step `log_metric` calls are
about 20x slower). A resumed run continues the same MLflow run: its id is kept beside the checkpoints.
MLflow's own system-metrics monitor (CPU, memory, disk, network, GPU when there is one) samples in a thread
into the same run as `system/...`."""
from __future__ import annotations

import json
import os
import time

from configs.training import TrainingConfig

RUN_RECORD = "mlflow_run.json"


class RunLogger:
    def __init__(self, config: TrainingConfig, enabled: bool):
        self.enabled, self.pending = enabled, []
        self.run_id, self.resumed = None, False
        if not enabled:
            return
        from mlflow.tracking import MlflowClient

        from tracking.store import tracking_uri

        uri = tracking_uri(config.mlflow.tracking_uri)
        self.client = MlflowClient(uri)
        self._start_run(config, uri)
        self.system = None
        if config.mlflow.system_metrics_interval_s:
            from mlflow.system_metrics.system_metrics_monitor import (
                SystemMetricsMonitor,
            )

            self.system = SystemMetricsMonitor(self.run_id, sampling_interval=config.mlflow.system_metrics_interval_s,
                                               resume_logging=self.resumed, tracking_uri=uri)
            self.system.start()

    def _start_run(self, config: TrainingConfig, uri: str) -> None:
        from tracking.store import EXPERIMENT_TAGS, artifact_location

        record = os.path.join(config.checkpoint.dir, RUN_RECORD)
        if os.path.exists(record):
            with open(record) as handle:
                self.run_id, self.resumed = json.load(handle)["run_id"], True
            self.client.update_run(self.run_id, status="RUNNING")
            return
        experiment = self.client.get_experiment_by_name(config.mlflow.experiment)
        experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(
            config.mlflow.experiment, artifact_location=artifact_location(config.mlflow.experiment, uri),
            tags=EXPERIMENT_TAGS)
        tags = {"sluice.kind": "training", **config.mlflow.tags}
        self.run_id = self.client.create_run(experiment_id, run_name=config.name, tags=tags).info.run_id
        os.makedirs(config.checkpoint.dir, exist_ok=True)
        with open(record, "w") as handle:
            json.dump({"run_id": self.run_id}, handle)

    def params(self, params: dict[str, str]) -> None:
        """Logged once, by the run that created the MLflow run (a resumed run has them already)."""
        if self.enabled and not self.resumed:
            from mlflow.entities import Param

            items = [Param(key, value) for key, value in params.items()]
            for start in range(0, len(items), 100):
                self.client.log_batch(self.run_id, params=items[start:start + 100])

    def metrics(self, step: int, values: dict[str, float | None]) -> None:
        if self.enabled:
            from mlflow.entities import Metric

            now = int(time.time() * 1000)
            self.pending += [Metric(key, float(value), now, step) for key, value in values.items() if value is not None]

    def flush(self) -> None:
        if self.enabled and self.pending:
            for start in range(0, len(self.pending), 1000):
                self.client.log_batch(self.run_id, metrics=self.pending[start:start + 1000])
            self.pending = []

    def text(self, text: str, name: str) -> None:
        if self.enabled:
            self.client.log_text(self.run_id, text, name)

    def artifact(self, path: str, folder: str | None = None) -> None:
        if self.enabled:
            self.client.log_artifact(self.run_id, path, folder)

    def artifacts(self, local_dir: str, folder: str) -> None:
        if self.enabled:
            self.client.log_artifacts(self.run_id, local_dir, folder)

    def finish(self, status: str = "FINISHED") -> None:
        if self.enabled:
            self.flush()
            if self.system:
                self.system.finish()
            self.client.set_terminated(self.run_id, status=status)
