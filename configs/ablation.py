"""The ablation file: one model trained on several data recipes at a matched token budget and several seeds, all
scored on one evaluation suite.

A base recipe (a path or inline) and named variants, each an override set merged key by key onto the base. What
the comparison must hold fixed is given once here and refused in a variant: the model and optimizer (`train`),
the tokenizer, the token budget and the evaluation. Everything is validated before any work starts; an error
names the field (`variants.+dedup.quality.filter.gopher_quality.min_words: Extra inputs are not permitted`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from configs.base import StrictModel, merged
from configs.evaluation import EvalSuiteConfig
from configs.parsing import parse_config, read_config_file, read_yaml
from configs.schema import DaskConfig, MlflowConfig, Recipe, parse_recipe
from configs.tokenizer import Normalization, TokenizerConfig
from configs.training import TrainingConfig

# Recipe keys a variant may not change: they would make the models differ in something other than their data.
HELD_FIXED = ("name", "store", "data_dir", "tokenizer", "train", "mixture.token_budget", "mixture.seed", "mlflow",
              "dask")
SeedControl = Literal["init", "data_order", "mixture_draw"]


class AblationTokenizer(TokenizerConfig):
    """One tokenizer for every variant: trained once on a seeded sample of the raw extraction output
    (decontaminated), or the SentencePiece model at `path`. Lossless by default (no normalization, whitespace
    kept; byte fallback for the rest), so that the suite's bits per byte count only bytes the model predicts."""
    path: str | None = Field(None, description="a trained SentencePiece model to use instead of training one")
    normalization: Normalization = Field("identity", description=(
        "SentencePiece normalization rule; identity keeps the text as it is (the nmt_ rules turn newlines into "
        "spaces and NFKC folds characters: about 0.5% of the suite's bytes would go unpredicted)"))
    remove_extra_whitespaces: bool = Field(False, description="SentencePiece's whitespace collapsing (lossy)")


class PowerConfig(StrictModel):
    """The test a verdict applies and the power it states (tasks.evaluation.compare)."""
    alpha: float = Field(0.05, gt=0, lt=1, description=(
        "a comparison is called when its two-sided paired t-test over seeds gives p below this (with seed rounds, "
        "the alpha is spent evenly over the looks)"))
    power: float = Field(0.8, gt=0, lt=1, description="the probability at which the minimum detectable effect is "
                                                        "called")
    seed_cap: int = Field(10, ge=2, description=(
        "the most seeds a user would run: an uncalled difference that more seeds would resolve within this many is "
        "'underpowered', else it is bounded by the minimum detectable effect (with seed rounds: their `max`)"))


class SeedRounds(StrictModel):
    """More seeds in rounds until the headline comparison (the last variant against the baseline, macro) is called
    or `max` seeds have run. Each look tests at alpha / (number of looks): adding looks cannot raise the chance of
    calling a difference that is not there above alpha (Bonferroni's bound holds for any dependence between the
    looks), at some cost in power."""
    max: int = Field(10, ge=2, description="the most seeds per variant")
    step: int = Field(2, ge=1, description="seeds added per round")


class MatchedRunsConfig(StrictModel):
    """What every file of runs compared at matched tokens holds (an ablation, a mixture search): a base recipe, the
    seeds, the one model, tokenizer, token budget and evaluation suite every run shares."""
    name: str = Field(min_length=1)
    base: str | dict = Field(description="the base recipe: a YAML path (relative to the file) or inline")
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=1, description=(
        "one run per variant each (with `seed_rounds`: the first round)"))
    power: PowerConfig = Field(default_factory=PowerConfig)
    seed_controls: list[SeedControl] = Field(default_factory=lambda: ["init", "data_order", "mixture_draw"],
                                             description="what a run's seed sets; the rest stays at seed 0")
    tokens: int = Field(ge=1, description=(
        "training tokens of every run, exactly: a whole number of updates (checked by flows.ablation before work)"))
    max_epochs: float = Field(4.0, gt=0, description="a variant may repeat its unique tokens up to this often")
    tokenizer: AblationTokenizer = Field(default_factory=AblationTokenizer)
    train: TrainingConfig = Field(description="model, optimizer, schedule, batch and hardware of every run")
    eval: EvalSuiteConfig
    dask: DaskConfig | None = Field(None, description="default: the base recipe's")
    mlflow: MlflowConfig = Field(default_factory=lambda: MlflowConfig(experiment="sluice-ablation"))
    origin: str = Field(".", description="directory relative base paths are read from (set by the file's loader)")

    @field_validator("train")
    @classmethod
    def _length_is_the_budget(cls, train: TrainingConfig) -> TrainingConfig:
        if train.steps is not None or train.tokens is not None:
            raise ValueError("train.steps / train.tokens: the run length is the ablation's `tokens`, set it there")
        return train

    @field_validator("train")
    @classmethod
    def _coupled_order(cls, train: TrainingConfig) -> TrainingConfig:
        """Runs read their mixture's stream in order unless the file says otherwise: arms that share pieces then
        see them at about the same step, and the paired difference loses most of the batch order's noise."""
        if "order" in train.data.model_fields_set:
            return train
        return train.model_copy(update={"data": train.data.model_copy(update={"order": "stream"})})

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be distinct, got {seeds}")
        return seeds

    def base_recipe(self) -> dict:
        if isinstance(self.base, dict):
            return self.base
        path = Path(self.origin) / self.base
        return read_yaml(path, "base: recipe")

    def recipe_for(self, name: str, overrides: dict) -> Recipe:
        """The base with `overrides` merged in, validated; what every run shares is set from this file."""
        raw = merged(self.base_recipe(), overrides)
        raw["name"] = f"{self.name}-{name}"
        raw.setdefault("mixture", {})["token_budget"] = self.tokens
        raw["tokenizer"] = self.tokenizer.model_dump(exclude={"path"})
        raw["train"] = {"enabled": False}
        raw["mlflow"] = self.mlflow.model_dump()
        if self.dask is not None:
            raw["dask"] = self.dask.model_dump()
        return parse_recipe(raw, origin=f"variants.{name}")


class AblationConfig(MatchedRunsConfig):
    variants: dict[str, dict] = Field(min_length=2, description=(
        "name -> overrides merged onto the base; an empty mapping is the base itself"))
    baseline: str | None = Field(None, description="the variant the others are compared with; default the first")
    seed_rounds: SeedRounds | None = Field(None, description=(
        "add seeds in rounds until the headline verdict is called (`sluice ablate --seed-rounds MAX`)"))
    variance_split: bool = Field(False, description=(
        "also train the baseline variant with each seed control varied alone over the seeds, and report which part "
        "of the seed noise each holds (`sluice ablate --variance-split`)"))
    reuse_older_runs: bool = Field(False, description=(
        "keep runs trained by an earlier version of the trainer's code instead of training them again; the table "
        "marks them and the verdict says so (`sluice ablate --reuse-older-runs`)"))

    @field_validator("variants")
    @classmethod
    def _no_held_fixed_overrides(cls, variants: dict[str, dict]) -> dict[str, dict]:
        for name, overrides in variants.items():
            if not isinstance(overrides, dict):
                raise ValueError(f"variant {name!r}: overrides must be a mapping, got {type(overrides).__name__}")
            for key in HELD_FIXED:
                if _has_key(overrides, key.split(".")):
                    raise ValueError(f"variant {name!r} overrides {key!r}, which every variant must share (the "
                                     f"comparison holds the model, tokenizer, token budget and evaluation fixed); "
                                     f"set it once at the top of the ablation file")
        return variants

    @model_validator(mode="after")
    def _consistent(self) -> "AblationConfig":
        if self.baseline is not None and self.baseline not in self.variants:
            raise ValueError(f"baseline {self.baseline!r} is not a variant ({', '.join(self.variants)})")
        if self.seed_rounds is not None and self.seed_rounds.max < len(self.seeds):
            raise ValueError(f"seed_rounds.max ({self.seed_rounds.max}) is below the {len(self.seeds)} seeds of the "
                             f"first round")
        return self

    def seed_looks(self) -> list[list[int]]:
        """The seeds of each look: the given seeds, then with seed rounds `step` more (the next unused integers)
        per round up to `max`."""
        looks = [list(self.seeds)]
        if self.seed_rounds is not None:
            while len(looks[-1]) < self.seed_rounds.max:
                extra = min(self.seed_rounds.step, self.seed_rounds.max - len(looks[-1]))
                looks.append(looks[-1] + list(range(max(looks[-1]) + 1, max(looks[-1]) + 1 + extra)))
        return looks

    @property
    def baseline_variant(self) -> str:
        return self.baseline or next(iter(self.variants))

    def variant_recipes(self) -> dict[str, Recipe]:
        """Each variant's recipe, validated; what is held fixed is set from the ablation file."""
        return {name: self.recipe_for(name, overrides) for name, overrides in self.variants.items()}


def _has_key(mapping: dict, path: list[str]) -> bool:
    head, *rest = path
    if head not in mapping:
        return False
    return not rest or (isinstance(mapping[head], dict) and _has_key(mapping[head], rest))


def load_ablation(path: str | Path) -> AblationConfig:
    return parse_ablation(read_config_file(path, "ablation file"), origin=str(path))


def parse_ablation(raw: dict, origin: str = "<ablation>") -> AblationConfig:
    """The ablation, validated, with every variant's recipe checked too (errors name the field)."""
    return parse_config(AblationConfig, raw, origin, "ablation", AblationConfig.variant_recipes)
