"""`sluice why`: a curation run's document stages found through its MLflow run (the `sluice.<stage>.manifest`
tags its stage reports set), then the document's fate read from their folders (tasks.document_fate)."""
from __future__ import annotations

from tasks.document_fate import DOCUMENT_STAGES, DocumentFate, document_fates


class RunNotFound(LookupError):
    """No curation run to answer from; the message says what to pass."""


def curation_run_fates(key: str, run_id: str | None = None) -> tuple[str, list[DocumentFate]]:
    """(the curation run's id, the fates of the documents `key` names in it); the newest curation run by default."""
    import mlflow

    if run_id is None:
        runs = mlflow.search_runs(search_all_experiments=True, filter_string="tags.`sluice.kind` = 'curation'",
                                  order_by=["attributes.start_time DESC"], max_results=1, output_format="list")
        if not runs:
            raise RunNotFound(f"no curation run in MLflow at {mlflow.get_tracking_uri()}: run `sluice run` first, "
                              "or set MLFLOW_TRACKING_URI to the store that has it")
        run = runs[0]
    else:
        run = mlflow.MlflowClient().get_run(run_id)
    tags = run.data.tags
    folders = {stage: tags[f"sluice.{stage}.manifest"].rsplit("/", 1)[0] for stage in DOCUMENT_STAGES
               if f"sluice.{stage}.manifest" in tags}
    if "extract" not in folders:
        raise RunNotFound(f"MLflow run {run.info.run_id} names no extract stage: pass a curation run's id (--run)")
    return run.info.run_id, document_fates(key, folders)
