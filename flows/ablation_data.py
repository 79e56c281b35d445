"""The data side of an ablation, on one Dask cluster: the evaluation suite, one tokenizer for every variant, and per
variant its document stages, decontamination, token shards and one mixture per seed (when the seed sets the
draw). Stages the variants have in common are the same store entries, so they run once: extraction for all of
them, the quality models and scores for the variants that filter on quality."""
from __future__ import annotations

import mlflow
from prefect import get_run_logger

from configs.ablation import AblationConfig, MatchedRunsConfig
from configs.mixture import MixtureConfig
from configs.schema import Recipe
from flows.stage_runner import stage_flow
from storage.fs import local_path
from storage.stage_result import StageResult, stage_file
from tasks.evaluation.stage import DecontaminateStage, EvalSuiteStage
from tasks.evaluation.suite import NGRAMS_FILE
from tasks.extract.stage import ExtractStage
from tasks.mixture.placement import covering_budget
from tasks.mixture.stage import MixtureStage
from tasks.pipeline import ABLATION_VARIANT, run_pipeline
from tasks.tokenize.stage import GivenTokenizerStage, TokenizerStage


def with_heldout_references(recipe: Recipe, ngrams: str) -> Recipe:
    """The recipe with its quality models trained only on reference text that shares no n-gram with the suite."""
    quality = recipe.quality
    return recipe.model_copy(update={"quality": quality.model_copy(update={
        "kenlm": quality.kenlm.model_copy(update={"heldout_ngrams": ngrams}),
        "classifier": quality.classifier.model_copy(update={"heldout_ngrams": ngrams})})})


def mixture_recipe(recipe: Recipe, ablation: AblationConfig, seed: int, ranks: int, seq_len: int) -> Recipe:
    """The variant's mixture for one seed: the budget plus enough slack that the trainer's windows (which never
    cross a shard, and are dealt evenly to the ranks) cover the ablation's tokens without wrapping around; every
    source may repeat up to the ablation's `max_epochs`."""
    mixture = recipe.mixture
    return recipe.model_copy(update={"mixture": mixture.model_copy(update={
        "token_budget": covering_budget(ablation.tokens, mixture.shard_tokens, ranks, seq_len),
        **seeded_draw(mixture, ablation.seed_controls, seed),
        "sources": [source.model_copy(update={"max_epochs": ablation.max_epochs}) for source in mixture.sources]})})


def seeded_draw(mixture: MixtureConfig, controls: list[str], seed: int) -> dict:
    """The mixture's seeds for a run's seed: the draw follows it under `mixture_draw`, the stream's order (the
    batch order of a trainer reading the stream) under `data_order`."""
    draw = seed if "mixture_draw" in controls else mixture.seed
    order = seed if "data_order" in controls else mixture.stream_seed
    return {"seed": draw, "order_seed": None if order == draw else order}


def prepare_data(ablation: AblationConfig, seeds: list[int], recipes: dict[str, Recipe], anchor: Recipe,
                 ranks: int, seq_len: int, parent_id: str) -> dict:
    """Every stage the runs of these seeds need, as stage results: `suite`, `tokenizer`, and per variant its
    `stages` and `mixtures` (seed -> mixture), on the cluster of the `flows.dask_cluster` block this runs in. A
    later look asks again with more seeds: what is done is found in the store."""
    data = prepare_stages(ablation, recipes, anchor, parent_id)
    for name, recipe in recipes.items():
        stages = data["variants"][name]["stages"]
        mixtures = {}
        with mlflow.start_run(run_id=data["variants"][name]["data_run"], nested=True):
            for seed in seeds:
                mixed = mixture_recipe(recipe, ablation, seed, ranks, seq_len)
                try:
                    mixtures[seed] = stage_flow(
                        mixed, MixtureStage(mixed, stages["tokenize"], stages["decontaminate"], data["tokenizer"]))
                except ValueError as error:
                    raise ValueError(f"variant {name!r} cannot supply {ablation.tokens:,} training tokens within "
                                     f"max_epochs {ablation.max_epochs}: {error}") from None
        data["variants"][name]["mixtures"] = mixtures
    return data


def prepare_stages(ablation: MatchedRunsConfig, recipes: dict[str, Recipe], anchor: Recipe, parent_id: str) -> dict:
    """The suite, the shared tokenizer, and per variant its document stages, decontamination and token shards
    (`variants.<name>.stages`), each variant's in a nested MLflow run of `parent_id` (`variants.<name>.data_run`)."""
    logger = get_run_logger()
    suite = stage_flow(anchor, EvalSuiteStage(anchor, ablation.eval))
    ngrams = stage_file(suite, NGRAMS_FILE)
    recipes = {name: with_heldout_references(recipe, ngrams) for name, recipe in recipes.items()}
    tokenizer = _shared_tokenizer(ablation, anchor, suite)
    variants = {}
    for name, recipe in recipes.items():
        logger.info("variant %s: document stages", name)
        data_run = variant_data_run(parent_id, name, recipe)
        with mlflow.start_run(run_id=data_run, nested=True):
            stages = run_pipeline(recipe, stage_flow, ABLATION_VARIANT, given={"suite": suite, "tokenizer": tokenizer})
        variants[name] = {"stages": stages, "data_run": data_run}
    return {"suite": suite, "tokenizer": tokenizer, "variants": variants}


def _shared_tokenizer(ablation: MatchedRunsConfig, anchor: Recipe, suite: StageResult) -> StageResult:
    """The given SentencePiece model, or one trained on a seeded sample of the raw extraction output after
    decontamination (the tokenizer never sees evaluation text)."""
    if ablation.tokenizer.path:
        return stage_flow(anchor, GivenTokenizerStage(local_path(ablation.tokenizer.path)))
    raw = stage_flow(anchor, ExtractStage(anchor))
    clean = stage_flow(anchor, DecontaminateStage(raw, suite))
    return stage_flow(anchor, TokenizerStage(anchor, clean))


def variant_data_run(parent_id: str, variant: str, recipe: Recipe) -> str:
    """A nested run that the variant's data stages report into (their metrics and tags would collide in the
    parent)."""
    experiment_id = mlflow.get_run(parent_id).info.experiment_id
    runs = mlflow.MlflowClient().search_runs([experiment_id], filter_string=(
        f"tags.`mlflow.parentRunId` = '{parent_id}' and tags.`sluice.kind` = 'ablation-data' "
        f"and tags.`sluice.variant` = '{variant}'"))
    if runs:
        return runs[0].info.run_id
    return mlflow.MlflowClient().create_run(experiment_id, run_name=f"{recipe.name}-data", tags={
        "mlflow.parentRunId": parent_id, "sluice.kind": "ablation-data", "sluice.variant": variant,
        "sluice.recipe": recipe.name}).info.run_id
