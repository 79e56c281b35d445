"""The curation flow run's own Prefect artifacts: one table of every stage and a markdown summary with the
MLflow run and the stages' charts, so the flow-run page answers "what did this run do" without opening the
subflows. Charts are shown as images when MLflow is a tracking server (its artifact proxy serves them)."""
from __future__ import annotations

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.reporting import artifact_key
from tracking.store import artifact_url, run_page_url


def publish_run_summary(recipe_name: str, stages: dict, run_id: str, tracking_uri: str) -> None:
    import mlflow

    key = artifact_key(recipe_name)
    create_table_artifact(key=f"{key}-stages", table=[_stage_row(name, result) for name, result in stages.items()],
                          description=f"{recipe_name}: every stage of the run")
    run = mlflow.get_run(run_id)
    page = run_page_url(tracking_uri, run.info.experiment_id, run_id)
    lines = [f"# {recipe_name}", f"- MLflow run: {f'[{run_id}]({page})' if page else f'`{run_id}` ({tracking_uri})'}",
             f"- stages: {', '.join(stages) or 'none'}"]
    for path in _charts(run_id):
        url = artifact_url(tracking_uri, run_id, path)
        lines += ["", f"## {path}", f"![{path}]({url})" if url else f"`{path}` (in the MLflow run's artifacts)"]
    create_markdown_artifact(key=f"{key}-summary", markdown="\n".join(lines),
                             description=f"{recipe_name}: run summary with charts")


def _stage_row(name: str, result: dict) -> dict:
    stats = result["stats"]
    return {"stage": name, "candidates": stats.get("candidates"), "documents out": stats.get("documents_out"),
            "cached": result["cached"], "wall seconds": stats.get("wall_seconds"),
            "orchestration share": stats.get("orchestration_share"),
            "overhead beyond the longest call": stats.get("overhead_share"), "fingerprint": result["fingerprint"]}


def _charts(run_id: str) -> list[str]:
    import mlflow

    client = mlflow.MlflowClient()
    found = []
    for folder in client.list_artifacts(run_id, "stages"):
        found += [entry.path for entry in client.list_artifacts(run_id, folder.path) if entry.path.endswith(".png")]
    return found
