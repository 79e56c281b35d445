"""The curation pipeline flow: the stages of tasks.pipeline in order, each a Prefect subflow, one MLflow run, one
Dask cluster for all of them."""
from __future__ import annotations

import yaml
from prefect import flow, get_run_logger

from configs.schema import Recipe
from flows.dask_cluster import dask_cluster
from flows.heartbeats import subflows_without_heartbeats
from flows.preflight import preflight
from flows.run_summary import publish_run_summary
from flows.stage_runner import stage_flow
from flows.tracking_run import BackgroundRun, pending
from storage.fs import local_path
from tasks.pipeline import run_pipeline
from tracking.datasets import log_datasets
from tracking.params import flatten
from tracking.store import run_page_url, tracking_uri, use_experiment


@flow(name="sluice-curation", log_prints=True)
def curation_flow(recipe: Recipe) -> dict:
    """Run the recipe's stages; returns each stage's summary plus the MLflow run id."""
    with subflows_without_heartbeats():
        return _curation(recipe)


def _curation(recipe: Recipe) -> dict:
    logger = get_run_logger()
    recipe = recipe.model_copy(update={"store": local_path(recipe.store)})
    tracking = tracking_uri(recipe.mlflow.tracking_uri)
    opening = BackgroundRun(lambda: _open_run(recipe))      # the first stage starts meanwhile (flows.tracking_run)
    try:
        preflight(recipe, recipe.name)      # a run started from the UI or from Python is checked here first
        with pending(opening), dask_cluster(recipe.dask) as cluster:
            logger.info("Dask scheduler %s; MLflow at %s",
                        recipe.dask.address or "of a LocalCluster started at the first stage to run", tracking)
            stages = run_pipeline(recipe, stage_flow)
            opening.activate()                                 # also when no stage logged
        import mlflow      # only now: importing it here earlier would wait for the thread's import (flows.tracking_run)

        run = mlflow.active_run()
        logger.info("MLflow run %s", run.info.run_id)
        publish_run_summary(recipe.name, stages, run.info.run_id, tracking)
        training = None
        if recipe.train.enabled and "mixture" in stages:     # after the Dask cluster is gone: the ranks get the cores
            from flows.training_flow import training_flow
            from flows.training_inputs import mixture_dataset, training_config

            training = training_flow(training_config(recipe, stages["tokenizer"], stages["mixture"], tracking,
                                                     run.info.run_id))
            mlflow.set_tag("sluice.training_run", training["mlflow_run_id"])
            log_datasets(training["mlflow_run_id"], [mixture_dataset(stages["mixture"])])
    except BaseException:
        _fail(opening)
        raise
    mlflow.end_run()
    return {"recipe": recipe.name, "store": recipe.store, "mlflow_run_id": run.info.run_id,
            "mlflow_tracking_uri": tracking, "experiment": recipe.mlflow.experiment, "stages": stages,
            "dask_scheduler": cluster.started,
            "mlflow_run_page": run_page_url(tracking, run.info.experiment_id, run.info.run_id),
            "training": training}


def _open_run(recipe: Recipe) -> str:
    """The run's MLflow run with the recipe as parameters and file; returns its id (the run is not left active on
    the thread that opens it)."""
    import mlflow
    from mlflow.tracking.context.registry import resolve_tags

    use_experiment(recipe.mlflow.experiment, recipe.mlflow.tracking_uri)
    client = mlflow.MlflowClient()
    tags = resolve_tags({"sluice.recipe": recipe.name, "sluice.kind": "curation"})   # as mlflow.start_run would
    run = client.create_run(mlflow.get_experiment_by_name(recipe.mlflow.experiment).experiment_id,
                            run_name=recipe.name, tags=tags)
    settings = recipe.model_dump(mode="json")
    client.log_batch(run.info.run_id, params=[mlflow.entities.Param(key, str(value))
                                              for key, value in flatten("", settings).items()])
    client.log_text(run.info.run_id, yaml.safe_dump(settings, sort_keys=False), "recipe.yaml")
    return run.info.run_id


def _fail(opening: BackgroundRun) -> None:
    """Mark the run failed, also when it failed before becoming this thread's active run."""
    import mlflow

    if mlflow.active_run() is not None:
        mlflow.end_run("FAILED")
    elif (run_id := opening.opened_id()) is not None:
        mlflow.MlflowClient().set_terminated(run_id, "FAILED")
