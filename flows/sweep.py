"""The sweep flow: a ladder of model sizes x token budgets (x learning rates), every run on one token dataset,
then the L(N, D) fit over the ladder (`flows.scaling_fit`).

The data is one recipe's mixture and tokenizer (the curation flow, so a recipe already run is found in its
store). MLflow: one parent run per sweep (found again by the sweep's settings, so a rerun continues it) and a
nested run per point (`sluice.kind = sweep-run`) tagged with its parameter count N, its trained tokens D and its
learning rate. A finished point leaves its result beside its checkpoints and is not trained again; the fit reads
the points the sweep joined (`tracking.run_members`), so a point trained for an earlier sweep (before a size was
added, say) counts.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

import mlflow
import yaml
from prefect import flow, get_run_logger

from configs.parsing import RecipeError
from configs.sweep import SweepConfig
from configs.training import TrainingConfig
from flows.curation import curation_flow
from flows.heartbeats import subflows_without_heartbeats
from flows.scaling_fit import RUN_KIND, can_fit, point_role, scaling_fit_flow
from flows.trainer_pool import warm_trainers
from flows.training_flow import training_flow
from flows.training_inputs import mixture_dataset, train_on_mixture
from storage.stage_figures import TokenizerFigures
from storage.fs import local_path
from tasks.mixture.placement import covering_budget
from tasks.resumable import run_once
from tracking.datasets import log_datasets
from tracking.parent_run import resumable_parent_run
from tracking.run_members import join
from tracking.store import run_page_url, use_experiment
from training.plan import model_config, plan

RESULT_FILE = "sweep_result.json"          # beside a finished point's checkpoints


@flow(name="sluice-sweep", log_prints=True)
def sweep_flow(sweep: SweepConfig) -> dict:
    """Make the data, train every point, fit L(N, D) when the ladder allows; returns the points and the fit."""
    with subflows_without_heartbeats(), warm_trainers():      # its trainings share torchruns
        return _sweep(sweep)


def _sweep(sweep: SweepConfig) -> dict:
    logger = get_run_logger()
    points = sweep.points()
    recipe = sweep.data_recipe()
    recipe = recipe.model_copy(update={"store": local_path(recipe.store), "mixture": recipe.mixture.model_copy(
        update={"token_budget": covering_budget(max(sweep.tokens), recipe.mixture.shard_tokens,
                                                sweep.train.hardware.data_parallel,
                                                max(model_config(point).seq_len for point in points))})})
    data = curation_flow(recipe)
    if "mixture" not in data["stages"]:
        raise RecipeError(f"recipe {recipe.name!r} makes no mixture (its tokenizer is off): a sweep trains on one")
    tracking = use_experiment(sweep.mlflow.experiment, sweep.mlflow.tracking_uri)
    parent_id = _parent_run(sweep, f"{recipe.store}/sweep/{sweep_key(sweep)}", data["mlflow_run_id"])
    logger.info("sweep %s: %d models x %d budgets x %d learning rates; MLflow run %s", sweep.name,
                len(sweep.models), len(sweep.tokens), len(sweep.learning_rates) or 1, parent_id)
    with mlflow.start_run(run_id=parent_id):
        runs = [_train(sweep, index, point, data, tracking, parent_id) for index, point in enumerate(points)]
    if any(point.model.parametrization == "mup" for point in points):
        _log_coordinate_check(points, TokenizerFigures.of(data["stages"]["tokenizer"]).vocab_size, parent_id)
    fit = scaling_fit_flow(parent_id, tracking, resamples=sweep.fit_resamples) if can_fit(runs) else None
    run = mlflow.get_run(parent_id)
    return {"sweep": sweep.name, "mlflow_run_id": parent_id, "mlflow_tracking_uri": tracking,
            "mlflow_run_page": run_page_url(tracking, run.info.experiment_id, parent_id), "runs": runs, "fit": fit}


def sweep_key(sweep: SweepConfig) -> str:
    """The sweep's identity: its settings and its recipe's content, wherever the file was. The fit's resample
    count is not part of it: more refits of the same runs are the same sweep."""
    body = sweep.model_dump(mode="json", exclude={"origin", "recipe", "fit_resamples"}) | {
        "recipe": sweep.data_recipe().model_dump(mode="json")}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def _parent_run(sweep: SweepConfig, home: str, curation_run_id: str) -> str:
    dumped = sweep.model_dump(mode="json", exclude={"origin"})
    settings = {key: value for key, value in dumped.items() if key not in ("recipe", "models")}
    return resumable_parent_run(home, sweep.mlflow.experiment, sweep.name, {
        "sluice.kind": "sweep", "sluice.sweep": sweep.name, "sluice.models": json.dumps(sweep.models),
        "sluice.curation_run": curation_run_id}, settings,
        ("sweep.yaml", yaml.safe_dump(dumped | {"recipe": sweep.data_recipe().model_dump(mode="json")},
                                      sort_keys=False)))


def _log_coordinate_check(points: list[TrainingConfig], vocab_size: int, parent_id: str) -> None:
    """μP's coordinate check at the sweep's widths, beside standard parametrization, as `coord_check.png` and
    `coord_check.json` on the sweep's run (training.coord_check)."""
    from dataclasses import replace

    from training.coord_check import coord_check_png, coordinate_sizes, width_slopes

    first = next(point for point in points if point.model.parametrization == "mup")
    base = replace(model_config(first), vocab_size=vocab_size)
    widths = sorted({model_config(point).d_model for point in points})
    if len(widths) < 2:
        return
    sizes = {name: coordinate_sizes(replace(base, parametrization=name), widths) for name in ("sp", "mup")}
    client = mlflow.MlflowClient()
    with tempfile.TemporaryDirectory() as folder:
        client.log_artifact(parent_id, coord_check_png(sizes, os.path.join(folder, "coord_check.png")))
    client.log_text(parent_id, json.dumps({name: {"sizes": by_width, "slopes": width_slopes(by_width)}
                                           for name, by_width in sizes.items()}, indent=2), "coord_check.json")


def _train(sweep: SweepConfig, index: int, point: TrainingConfig, data: dict, tracking: str,
           parent_id: str) -> dict:
    """One point of the sweep, trained (or found trained); its N, D, learning rate and final losses."""
    logger = get_run_logger()
    stages = data["stages"]
    figures = plan(point.model_copy(update={"model": point.model.model_copy(
        update={"vocab_size": TokenizerFigures.of(stages["tokenizer"]).vocab_size})}))
    shape = {"n_params": figures["parameters"], "tokens": figures["tokens"], "lr": point.optimizer.lr}
    name = (f"{sweep.name}-{figures['parameters'] / 1e6:.2f}M-{figures['tokens']}tok"
            + (f"-lr{point.optimizer.lr:g}" if sweep.learning_rates else ""))
    config = train_on_mixture(point, name, data["store"], sweep.mlflow.experiment, stages["tokenizer"],
                              stages["mixture"], tracking, {
                                  "mlflow.parentRunId": parent_id, "sluice.kind": RUN_KIND, "sluice.sweep": sweep.name,
                                  "sluice.point": str(index), "sluice.n_params": str(shape["n_params"]),
                                  "sluice.tokens": str(shape["tokens"]), "sluice.lr": repr(shape["lr"]),
                                  "sluice.d_model": str(figures["model"]["d_model"])})
    found = run_once(os.path.join(config.checkpoint.dir, RESULT_FILE),
                     lambda: shape | _trained(config, stages["mixture"]))
    if found.pop("resumed"):
        logger.info("%s: already trained, skipping", name)
    join(parent_id, found["mlflow_run_id"], point_role(shape["n_params"], shape["tokens"], shape["lr"],
                                                       {key: figures["model"][key]
                                                        for key in ("n_layers", "d_model", "n_heads")}))
    return found


def _trained(config: TrainingConfig, mixture: dict) -> dict:
    result = training_flow(config)
    log_datasets(result["mlflow_run_id"], [mixture_dataset(mixture)])
    return {key: result[key] for key in ("mlflow_run_id", "loss", "val_loss", "val_bpb") if key in result}
