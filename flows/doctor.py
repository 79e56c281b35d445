"""`sluice doctor RUN_ID`, and the report every training run gets: a tracked run read back from MLflow
(training.doctor checks it), its findings logged to the run as `doctor.md` and `doctor.json`, and, inside a
Prefect flow run, as a markdown artifact."""
from __future__ import annotations

import json

import fsspec
import mlflow

from flows.reporting import artifact_key
from storage.stage_figures import MixtureFigures
from training.doctor import RunHistory, diagnose, report_text
from training.event_metrics import RESUME_METRIC, ROLLBACK_METRIC, SPIKE_METRIC

METRICS = ("loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "mfu", "b_noise", "tokens", "batch_sequences",
           SPIKE_METRIC, ROLLBACK_METRIC, RESUME_METRIC)


def run_history(client: mlflow.MlflowClient, run_id: str) -> RunHistory:
    """The run's params and metric histories in the order logged, and its mixture's epochs per source."""
    run = client.get_run(run_id)
    metrics = {}
    for name in METRICS:
        points = sorted(client.get_metric_history(run_id, name), key=lambda metric: (metric.timestamp, metric.step))
        if points:
            metrics[name] = [(metric.step, metric.value) for metric in points]
    return RunHistory(run.data.params, metrics, _mixture_epochs(run.data.tags.get("sluice.mixture_manifest")))


def _mixture_epochs(manifest_url: str | None) -> dict[str, float]:
    if not manifest_url:
        return {}
    try:
        with fsspec.open(manifest_url, "r") as handle:
            sources = MixtureFigures.from_stats(json.load(handle)["stats"]).sources
    except (OSError, KeyError, ValueError):
        return {}                     # the store moved or was cleaned: the findings say less, nothing fails
    return {source["source"]: source["epochs"] for source in sources}


def doctor(run_id: str, tracking: str | None = None, publish: bool = True) -> dict:
    """The findings for `run_id` (in the tracking store at `tracking`, default MLflow's current); with
    `publish`, logged to the run (and to the Prefect flow run, if any)."""
    client = mlflow.MlflowClient(tracking)
    findings = diagnose(run_history(client, run_id))
    text = report_text(findings, run_id)
    result = {"run_id": run_id, "findings": [finding.to_dict() for finding in findings], "markdown": text}
    if publish:
        client.log_text(run_id, text, "doctor.md")
        client.log_text(run_id, json.dumps(result["findings"], indent=2), "doctor.json")
        client.set_tag(run_id, "sluice.doctor_findings", str(len(findings)))
        _prefect_artifact(run_id, text, len(findings))
    return result


def _prefect_artifact(run_id: str, text: str, count: int) -> None:
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(key=artifact_key(f"doctor-{run_id}"), markdown=text,
                             description=f"training run {run_id}: {count} finding(s)")
