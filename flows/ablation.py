"""The ablation flow: the same model trained on several data recipes at a matched token budget and several seeds,
every model scored on one evaluation suite in exact bits per byte, and a verdict against seed noise in MLflow.

MLflow: one parent run per ablation (found again by the ablation's fingerprint, so a rerun continues it), a nested
run per variant for its data stages (`sluice.kind = ablation-data`), and a nested run per (variant, seed) for its
training (`sluice.kind = ablation-run`) with the mixture and the suite attached as MLflow datasets. A finished
training run leaves its result beside its checkpoints and is not trained again; a half-trained one resumes. Every
run the comparison reads is tagged as the parent's (variant, seed) (`tracking.run_members`), so one trained for an
earlier ablation (before a seed was added, say) counts, and one trained again replaces the old.
"""
from __future__ import annotations

import hashlib
import json
import os

import mlflow
import yaml
from prefect import flow, get_run_logger

from configs.ablation import AblationConfig
from configs.parsing import RecipeError
from configs.training import TrainingConfig
from flows.ablation_data import prepare_data
from flows.ablation_report import (CHARTS, RUN_KIND, SPLIT_KIND, ablation_datasets, comparison, power_tags,
                                   publish_ablation_report, run_role)
from flows.dask_cluster import dask_cluster
from flows.heartbeats import subflows_without_heartbeats
from flows.trainer_pool import warm_trainers
from flows.training_flow import training_flow
from flows.training_inputs import older_code_checkpoints, train_on_mixture
from storage.fs import local_path
from storage.stage_result import stage_file
from tasks.evaluation.compare import Power
from tasks.evaluation.suite import SUITE_FILE
from tracking.datasets import log_datasets
from tracking.parent_run import resumable_parent_run
from tracking.run_members import join
from tracking.store import run_page_url, use_experiment
from training.plan import plan

RESULT_FILE = "ablation_result.json"       # beside a finished run's checkpoints
NOT_IN_KEY = {"origin", "reuse_older_runs", "variance_split"}     # settings that leave the comparison as it is


def budget_figures(ablation: AblationConfig) -> tuple[int, int]:
    """(seq_len, tokens per update); refuses a budget that is not a whole number of updates."""
    figures = plan(ablation.train.model_copy(update={"tokens": ablation.tokens}))
    per_update = figures["tokens_per_update"]
    if ablation.tokens % per_update:
        low = ablation.tokens // per_update * per_update
        raise RecipeError(f"tokens: {ablation.tokens:,} is not a whole number of updates of {per_update:,} tokens "
                          f"(micro_batch_size x grad_accumulation x data_parallel x seq_len): use {max(low, per_update):,}"
                          f" or {low + per_update:,}")
    return per_update // (ablation.train.micro_batch_size * ablation.train.grad_accumulation
                          * ablation.train.hardware.data_parallel), per_update


@flow(name="sluice-ablation", log_prints=True)
def ablation_flow(ablation: AblationConfig, parent_run_id: str | None = None,
                  charted: tuple[str, ...] = CHARTS) -> dict:
    """Run every variant's data stages and every (variant, seed) training run; returns the comparison.
    `parent_run_id`: an MLflow run the ablation's own run nests under (a mixture search's); `charted`: which of
    the report's CHARTS it draws."""
    with subflows_without_heartbeats(), warm_trainers():      # its trainings share torchruns
        return _ablation(ablation, parent_run_id, charted)


def _ablation(ablation: AblationConfig, parent_run_id: str | None, charted: tuple[str, ...]) -> dict:
    logger = get_run_logger()
    seq_len, per_update = budget_figures(ablation)
    recipes = {name: recipe.model_copy(update={"store": local_path(recipe.store)})
               for name, recipe in ablation.variant_recipes().items()}
    anchor = recipes[ablation.baseline_variant]
    tracking = use_experiment(ablation.mlflow.experiment, ablation.mlflow.tracking_uri)
    home = f"{anchor.store}/ablation/{ablation_key(ablation)}"
    parent_id = _parent_run(ablation, home, per_update, parent_run_id)
    looks = ablation.seed_looks()
    with mlflow.start_run(run_id=parent_id):
        for look, seeds in enumerate(looks, start=1):
            with dask_cluster(anchor.dask):
                logger.info("ablation %s: %d variants x %d seeds (look %d of at most %d), %s tokens each; MLflow run "
                            "%s", ablation.name, len(recipes), len(seeds), look, len(looks), f"{ablation.tokens:,}",
                            parent_id)
                data = prepare_data(ablation, seeds, recipes, anchor, ablation.train.hardware.data_parallel, seq_len,
                                    parent_id)
            for variant in recipes:            # after the Dask cluster is gone: the ranks get the cores
                for seed in seeds:
                    _train(ablation, variant, seed, data, anchor.store, tracking, parent_id, per_update)
            mlflow.set_tag("sluice.seeds", json.dumps(seeds))
            if look < len(looks) and headline_called(comparison(parent_id)):
                logger.info("ablation %s: the headline comparison is called at %d seeds", ablation.name, len(seeds))
                break
        split = _variance_split(ablation, seeds, recipes, anchor, tracking, parent_id, seq_len, per_update) \
            if ablation.variance_split else None
        report = publish_ablation_report(ablation, parent_id, data, tracking, f"{home}/report", split, charted)
    run = mlflow.get_run(parent_id)
    return {"ablation": ablation.name, "mlflow_run_id": parent_id, "mlflow_tracking_uri": tracking,
            "mlflow_run_page": run_page_url(tracking, run.info.experiment_id, parent_id), **report}


def headline_called(table: dict) -> bool:
    """Whether the headline comparison (the last variant against the baseline, macro) is called: what seed rounds
    stop on."""
    return table["variants"][table["headline"]]["vs_baseline"]["macro"]["called"]


def look_power(ablation: AblationConfig) -> Power:
    """The paired test at each look: alpha spent evenly over the looks; the seed cap is the rounds' max."""
    cap = ablation.seed_rounds.max if ablation.seed_rounds is not None else ablation.power.seed_cap
    return Power(alpha=ablation.power.alpha / len(ablation.seed_looks()), power=ablation.power.power, seed_cap=cap)


def ablation_key(ablation: AblationConfig) -> str:
    """The ablation's identity: its settings and its base recipe's content, wherever the file was."""
    body = ablation.model_dump(mode="json", exclude=NOT_IN_KEY) | {"base": ablation.base_recipe()}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def _parent_run(ablation: AblationConfig, home: str, per_update: int, nested_in: str | None) -> str:
    """The ablation's MLflow run: the one an earlier attempt of the same ablation started, else a new one."""
    dumped = ablation.model_dump(mode="json", exclude=NOT_IN_KEY)
    # variant names such as `+dedup` are not valid parameter names: the variants and the base are in ablation.yaml
    settings = {key: value for key, value in dumped.items() if key not in ("variants", "base")}
    return resumable_parent_run(home, ablation.mlflow.experiment, ablation.name, {
        "sluice.kind": "ablation", "sluice.ablation": ablation.name, "sluice.baseline": ablation.baseline_variant,
        "sluice.variants": json.dumps(list(ablation.variants)), "sluice.seeds": json.dumps(ablation.seeds),
        "sluice.seed_controls": ",".join(ablation.seed_controls), "sluice.tokens": str(ablation.tokens),
        "sluice.tokens_per_update": str(per_update), **power_tags(look_power(ablation)),
        **({"mlflow.parentRunId": nested_in} if nested_in else {})}, settings,
        ("ablation.yaml", yaml.safe_dump(dumped | {"base": ablation.base_recipe()}, sort_keys=False)))


def run_spec(ablation: AblationConfig, seed: int, suite_path: str) -> TrainingConfig:
    """The one training config with what a seed sets (per `seed_controls`) and the evaluation suite."""
    train = ablation.train
    controls = ablation.seed_controls
    return train.model_copy(deep=True, update={
        "tokens": ablation.tokens,
        "seed": seed if "init" in controls else train.seed,
        "data": train.data.model_copy(update={"seed": seed if "data_order" in controls else train.data.seed}),
        "eval": train.eval.model_copy(update={"suite": suite_path})})


def _variance_split(ablation: AblationConfig, seeds: list[int], recipes: dict, anchor, tracking: str,
                    parent_id: str, seq_len: int, per_update: int) -> dict[str, dict[int, str]]:
    """control -> seed -> MLflow run id of the baseline variant trained with that seed control alone following
    the seed (the other controls at their fixed values). A control's run at the first seed is often the main
    run itself (every control at that seed), found again by its folder."""
    baseline = ablation.baseline_variant
    alone = {control: ablation.model_copy(update={"seed_controls": [control]}) for control in ablation.seed_controls}
    with dask_cluster(anchor.dask):
        data = {control: prepare_data(single, seeds, {baseline: recipes[baseline]}, anchor,
                                      ablation.train.hardware.data_parallel, seq_len, parent_id)
                for control, single in alone.items()}
    return {control: {seed: _train(single, baseline, seed, data[control], anchor.store, tracking, parent_id,
                                   per_update, member=False)["mlflow_run_id"] for seed in seeds}
            for control, single in alone.items()}


def _description(ablation: str, variant: str, seed: int, mixture: dict, data: dict, member: bool) -> str:
    """The run page's description: which run of which ablation, on which data."""
    role = "" if member else " (a run of the variance split, not compared)"
    return (f"Ablation **{ablation}**: variant `{variant}`, seed {seed}{role}.\n\n"
            f"Mixture digest `{mixture['digest']}`, tokenizer `{data['tokenizer']['digest']}`, evaluation suite "
            f"`{data['suite']['digest']}`. The verdict is on the parent run's page.")


def _train(ablation: AblationConfig, variant: str, seed: int, data: dict, store: str, tracking: str,
           parent_id: str, per_update: int, member: bool = True) -> dict:
    """One (variant, seed) run, trained or found again; `member`: it joins the comparison (else it is a run of
    the variance split, tagged with the seed controls it varies)."""
    logger = get_run_logger()
    mixture = data["variants"][variant]["mixtures"][seed]
    suite = data["suite"]
    kind = {"sluice.kind": RUN_KIND} if member else {"sluice.kind": SPLIT_KIND,
                                                      "sluice.seed_controls": ",".join(ablation.seed_controls)}
    config = train_on_mixture(
        run_spec(ablation, seed, stage_file(suite, SUITE_FILE)),
        f"{ablation.name}-{variant}-seed{seed}" + ("" if member else f"-{'-'.join(ablation.seed_controls)}-only"),
        store, ablation.mlflow.experiment, data["tokenizer"], mixture, tracking,
        {"mlflow.parentRunId": parent_id, **kind, "sluice.ablation": ablation.name,
         "sluice.variant": variant, "sluice.seed": str(seed), "sluice.tokens_per_update": str(per_update),
         "sluice.suite_digest": suite["digest"], "mlflow.note.content": _description(ablation.name, variant, seed,
                                                                                    mixture, data, member)})
    record = os.path.join(config.checkpoint.dir, RESULT_FILE)
    older = [path for path in older_code_checkpoints(config.checkpoint.dir)
             if os.path.exists(os.path.join(path, RESULT_FILE))] if ablation.reuse_older_runs else []
    if not os.path.exists(record) and older:
        logger.warning("%s seed %d: reusing the run in %s, trained by another version of the trainer's code "
                       "(--reuse-older-runs)", variant, seed, older[0])
        record = os.path.join(older[0], RESULT_FILE)
    if os.path.exists(record):
        logger.info("%s seed %d: already trained (%s), skipping", variant, seed, record)
        with open(record) as handle:
            result = json.load(handle)
    else:
        result = training_flow(config)
        log_datasets(result["mlflow_run_id"], ablation_datasets(mixture, suite))
        with open(record, "w") as handle:
            json.dump(result, handle)
    if member:
        join(parent_id, result["mlflow_run_id"], run_role(variant, seed))     # also when another ablation trained it
    return result
