"""The sweep file: one training setup run over a grid of model sizes x token budgets (a scaling ladder, as
OLMo's and DataDecide's), optionally x learning rates, all on one token dataset: the mixture and tokenizer of one
data recipe.

Every rung's model is `train.model` with one entry of `models` laid over it; its length is one of `tokens`. The
runs differ in nothing else, so their final validation losses are points of one L(N, D) (`sluice scaling fit`).
"""
from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError, field_validator, model_validator

from configs.base import StrictModel
from configs.parsing import RecipeError, parse_config, read_config_file, read_yaml, validation_problems
from configs.schema import MlflowConfig, Recipe, parse_recipe
from configs.training import ModelSpec, TrainingConfig

BOOTSTRAP_RESAMPLES = 200   # refits behind the scaling law's 95% intervals


class SweepConfig(StrictModel):
    name: str = Field(min_length=1)
    recipe: str | dict = Field(description=(
        "the data recipe (a YAML path relative to the sweep file, or inline) whose mixture and tokenizer every run "
        "trains on; its `train` section is not used, and its mixture is sized for the largest budget"))
    train: TrainingConfig = Field(description="model, optimizer, schedule, batch and hardware of every run")
    models: list[dict] = Field(min_length=1, description="the ladder's sizes: overrides of train.model, smallest first")
    tokens: list[int] = Field(min_length=1, description="training tokens of each run (rounded up to whole updates)")
    learning_rates: list[float] = Field(default_factory=list, description=(
        "also sweep optimizer.lr over these (a learning-rate sweep per size); empty: train.optimizer.lr only"))
    fit_resamples: int = Field(BOOTSTRAP_RESAMPLES, ge=10, description=(
        "bootstrap refits behind the fitted law's 95% intervals (`sluice scaling fit --resamples` refits with more)"))
    mlflow: MlflowConfig = Field(default_factory=lambda: MlflowConfig(experiment="sluice-sweep"))
    origin: str = Field(".", description="directory a relative recipe path is read from (set by load_sweep)")

    @field_validator("models")
    @classmethod
    def _models_are_model_specs(cls, models: list[dict]) -> list[dict]:
        for index, overrides in enumerate(models):
            try:
                ModelSpec.model_validate(overrides)
            except ValidationError as error:
                raise ValueError(f"models[{index}]:\n{validation_problems(error)}") from None
        return models

    @field_validator("tokens", "learning_rates")
    @classmethod
    def _positive_and_distinct(cls, values: list) -> list:
        if any(value <= 0 for value in values) or len(set(values)) != len(values):
            raise ValueError(f"must be positive and distinct, got {values}")
        return values

    @field_validator("train")
    @classmethod
    def _length_is_the_sweeps(cls, train: TrainingConfig) -> TrainingConfig:
        if train.steps is not None or train.tokens is not None:
            raise ValueError("train.steps / train.tokens: each run's length is one of the sweep's `tokens`")
        return train

    @model_validator(mode="after")
    def _each_model_is_distinct(self) -> "SweepConfig":
        if len({repr(sorted(model.items())) for model in self.models}) != len(self.models):
            raise ValueError("models: two entries are the same model")
        return self

    def points(self) -> list[TrainingConfig]:
        """Every run's training config (its model, length and learning rate set), ladder order."""
        rates = self.learning_rates or [self.train.optimizer.lr]
        return [self.train.model_copy(deep=True, update={
                    "model": self.train.model.model_copy(update=model), "tokens": tokens,
                    "optimizer": self.train.optimizer.model_copy(update={"lr": lr})})
                for model in self.models for tokens in self.tokens for lr in rates]

    def recipe_mapping(self) -> dict:
        """The data recipe as written (read from its file when given as a path)."""
        raw = dict(self.recipe) if isinstance(self.recipe, dict) else read_yaml(Path(self.origin) / self.recipe,
                                                                                  "recipe")
        if not isinstance(raw, dict):
            raise RecipeError(f"recipe: expected a mapping, got {type(raw).__name__}")
        return raw

    def data_recipe(self) -> Recipe:
        """The recipe that makes the sweep's token dataset: training off, the mixture as large as the largest
        budget (the sweep flow adds the slack the trainer's windows need)."""
        raw = self.recipe_mapping()
        raw = raw | {"train": {"enabled": False}, "mlflow": self.mlflow.model_dump(),
                     "mixture": dict(raw.get("mixture") or {}) | {"token_budget": max(self.tokens)}}
        return parse_recipe(raw, origin="recipe")


def load_sweep(path: str | Path) -> SweepConfig:
    return parse_sweep(read_config_file(path, "sweep file"), origin=str(path))


def parse_sweep(raw: dict, origin: str = "<sweep>") -> SweepConfig:
    """The sweep, validated, with its data recipe checked too (errors name the field)."""
    return parse_config(SweepConfig, raw, origin, "sweep", SweepConfig.data_recipe)
