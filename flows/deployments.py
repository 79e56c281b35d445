"""Serve the deployments of `configs/deployments.yaml` (what `sluice server` runs as its deployments process):

    python -m flows.deployments configs/deployments.yaml

Each deployment's parameter is the whole typed model (the curation flow takes a `Recipe`, the training flow a
`TrainingConfig`), so the Prefect UI's run form shows every field of the recipe with its type, default and
description, and the defaults are the recipe file with the deployment's `overrides` merged in. A path plus
free-form overrides would show one text box and check nothing until the run starts.

With SLUICE_DASK_ADDRESS set (by `sluice server --dask-workers N`), curation runs use that external Dask
cluster unless the recipe names a scheduler itself. Flow runs log to MLFLOW_TRACKING_URI (the MLflow server).
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from configs.base import merged
from configs.deployments import DeploymentSpec, load_deployments

ROOT = Path(__file__).resolve().parents[1]


def default_parameters(spec: DeploymentSpec) -> dict:
    """The run form's defaults: the recipe with the overrides, validated by the flow's own model."""
    from configs.schema import parse_recipe
    from configs.training import TrainingConfig

    raw = merged(yaml.safe_load((ROOT / spec.recipe).read_text()), spec.overrides)
    if spec.flow == "train":
        return {"config": TrainingConfig.model_validate(raw).model_dump(mode="json")}
    dask_address = os.environ.get("SLUICE_DASK_ADDRESS")
    if spec.flow == "ablation":
        from configs.ablation import parse_ablation

        return {"ablation": _matched_runs_parameters(parse_ablation, raw, spec, dask_address)}
    if spec.flow == "mix-search":
        from configs.mix_search import parse_mix_search

        return {"search": _matched_runs_parameters(parse_mix_search, raw, spec, dask_address)}
    if spec.flow == "sweep":
        return {"sweep": _sweep_parameters(raw, spec, dask_address)}
    recipe = parse_recipe(raw, origin=spec.recipe)
    if dask_address and not recipe.dask.address:
        recipe = recipe.model_copy(update={"dask": recipe.dask.model_copy(update={"address": dask_address})})
    return {"recipe": recipe.model_dump(mode="json")}


def _matched_runs_parameters(parse: Callable, raw: dict, spec: DeploymentSpec, dask_address: str | None) -> dict:
    """The ablation (or mixture search) with its base recipe inlined, so the run form holds everything; the
    external Dask cluster unless the file or its base names a scheduler."""
    ablation = parse(raw | {"origin": str((ROOT / spec.recipe).parent)}, origin=spec.recipe)
    base = ablation.base_recipe()
    named = (ablation.dask.address if ablation.dask else None) or base.get("dask", {}).get("address")
    if dask_address and not named:
        base["dask"] = base.get("dask", {}) | {"address": dask_address}
        if ablation.dask:
            ablation = ablation.model_copy(update={"dask": ablation.dask.model_copy(update={"address": dask_address})})
    return ablation.model_copy(update={"base": base, "origin": str(ROOT)}).model_dump(mode="json")


def _sweep_parameters(raw: dict, spec: DeploymentSpec, dask_address: str | None) -> dict:
    """The sweep with its data recipe inlined; the external Dask cluster unless the recipe names a scheduler."""
    from configs.sweep import parse_sweep

    sweep = parse_sweep(raw | {"origin": str((ROOT / spec.recipe).parent)}, origin=spec.recipe)
    recipe = sweep.recipe_mapping()
    if dask_address and not recipe.get("dask", {}).get("address"):
        recipe["dask"] = recipe.get("dask", {}) | {"address": dask_address}
    return sweep.model_copy(update={"recipe": recipe, "origin": str(ROOT)}).model_dump(mode="json")


def runner_deployment(spec: DeploymentSpec):
    from prefect.client.schemas.schedules import CronSchedule

    from flows.ablation import ablation_flow
    from flows.curation import curation_flow
    from flows.mix_search import mix_search_flow
    from flows.sweep import sweep_flow
    from flows.training_flow import training_flow

    flow = {"curation": curation_flow, "train": training_flow, "ablation": ablation_flow, "sweep": sweep_flow,
            "mix-search": mix_search_flow}[spec.flow]
    schedule = {}
    if spec.cron:
        schedule = {"schedule": CronSchedule(cron=spec.cron, timezone=spec.timezone)}
    elif spec.interval_s:
        schedule = {"interval": spec.interval_s}
    return flow.to_deployment(spec.name, parameters=default_parameters(spec), description=spec.description,
                              tags=spec.tags, concurrency_limit=spec.concurrency_limit, paused=spec.paused,
                              **schedule)


def wait_for_api(timeout_s: float = 180.0, poll_s: float = 0.5) -> None:
    """Until the Prefect API answers: `sluice server` starts this process beside the services, so that its imports
    overlap their start-ups."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while (problem := client.api_healthcheck()) is not None:
            if time.monotonic() > deadline:
                raise SystemExit(f"the Prefect API did not answer within {timeout_s:.0f} s: {problem}")
            time.sleep(poll_s)


def main(argv: list[str] | None = None) -> int:
    from prefect import serve

    (path,) = argv if argv is not None else sys.argv[1:]
    deployments = [runner_deployment(spec) for spec in load_deployments(path).deployments]
    wait_for_api()
    serve(*deployments, print_starting_message=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
