"""The mixture search file (`sluice mix-search`): which domains of a recipe's domain stage to mix, the swarm of
small proxy runs over sampled mixtures, the law fitted to them, and the validation of the mixture it proposes.

The runs are ablations (`configs.ablation`): the same model, tokenizer, token budget and evaluation suite for
every mixture, so what the file shares with an ablation file means the same here. Every mixture's sources are the
domains, one each (`where: {topic: [3]}`), drawn from the base recipe's final documents.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from configs.ablation import MatchedRunsConfig, SeedRounds
from configs.base import StrictModel
from configs.parsing import RecipeError, parse_config, read_config_file
from configs.schema import MlflowConfig, parse_recipe


class SwarmConfig(StrictModel):
    """The proxy runs: the natural mixture (the corpus's own token shares of the domains), then Dirichlet draws
    centred on it (RegMix; Olmix), each trained once at the file's token budget."""
    size: int = Field(16, ge=3, description="proxy runs, the natural mixture included")
    concentration: float = Field(4.0, gt=0, description=(
        "the Dirichlet's concentration: its parameters are this times the natural shares (large keeps the draws "
        "near the natural mixture, small spreads them over the simplex)"))
    seed: int = Field(0, ge=0, description="the draws of the mixtures")


class TrustRegionConfig(StrictModel):
    """Where the proposal may go (tasks/mixture/mixing_law.py, `trust_region`): near the natural mixture, and as far
    as the swarm measured only where the law ranked the held-out swarm runs well."""
    floor: float = Field(0.5, ge=0.0, le=1.0, description="each domain keeps at least this share of its natural weight")
    ceiling: float = Field(2.0, ge=1.0, description="... and at most this many times it (and never past its cap)")
    reliable: float = Field(0.8, ge=-1.0, le=1.0, description=(
        "the law's leave-one-out rank correlation on the target from which each domain's bounds widen to the "
        "weights the swarm measured for it"))


class MixSearchConfig(MatchedRunsConfig):
    column: Literal["topic", "format"] = Field("topic", description="which domain column the mixtures weigh")
    domains: list[int] | None = Field(None, min_length=2, description=(
        "the domain ids to mix (default: every one the domain stage makes); documents of the others are left out"))
    swarm: SwarmConfig = Field(default_factory=SwarmConfig)
    law: Literal["log_linear", "tree"] = Field("log_linear", description=(
        "log_linear: the mixing law L = c + exp(b + t . w) (Ye et al. 2024); tree: gradient-boosted trees from "
        "the weights to the loss (as RegMix's LightGBM)"))
    target: str = Field("macro", description=(
        "what the proposal minimises: the suite's macro bits per byte, or one evaluation domain's"))
    target_tokens: int | None = Field(None, ge=1, description=(
        "the token budget the proposed mixture is for: no domain may be repeated beyond `max_epochs` there "
        "(default: `tokens`, the proxies' budget)"))
    trust_region: TrustRegionConfig = Field(default_factory=TrustRegionConfig)
    validation_rounds: SeedRounds | None = Field(None, description=(
        "the validation adds seeds in rounds (an ablation's `seed_rounds`) until proposed against natural is called "
        "or `max` seeds have run: then it is bounded by the detectable effect"))
    validate_proposal: bool = Field(True, description=(
        "train proposed, natural and uniform mixtures over `seeds` and call the difference (an ablation)"))
    mlflow: MlflowConfig = Field(default_factory=lambda: MlflowConfig(experiment="sluice-mix-search"))

    @model_validator(mode="after")
    def _known_target(self) -> "MixSearchConfig":
        if self.target != "macro" and self.target not in self.eval.domains:
            raise ValueError(f"target {self.target!r} is neither 'macro' nor an evaluation domain "
                             f"({', '.join(self.eval.domains)})")
        return self

    @property
    def proposal_tokens(self) -> int:
        return self.target_tokens or self.tokens


def _has_domains(search: MixSearchConfig) -> None:
    """The base recipe must make the domain column the mixtures select by."""
    recipe = parse_recipe(search.base_recipe(), origin="base")
    if not recipe.domains.enabled:
        raise RecipeError("base: the recipe's domain stage is off (domains.enabled: false); the mixtures are over "
                          "its topic or format clusters")
    clusters = recipe.domains.topics if search.column == "topic" else recipe.domains.formats
    unknown = [domain for domain in search.domains or [] if not 0 <= domain < clusters]
    if unknown:
        raise RecipeError(f"domains: {unknown} are not {search.column} ids of the base recipe (0 to {clusters - 1})")


def load_mix_search(path: str | Path) -> MixSearchConfig:
    return parse_mix_search(read_config_file(path, "mix-search file"), origin=str(path))


def parse_mix_search(raw: dict, origin: str = "<mix-search>") -> MixSearchConfig:
    return parse_config(MixSearchConfig, raw, origin, "mix-search file", _has_domains)
