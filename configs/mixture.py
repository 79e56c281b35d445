"""Recipe model for the data mixture: token sources with weights, a token budget, a repetition cap and a
train / validation split by document."""
from __future__ import annotations

from pydantic import Field, field_validator

from configs.base import StrictModel


class MixtureSource(StrictModel):
    name: str = Field(min_length=1)
    where: dict[str, list[str | int]] = Field(default_factory=dict, description=(
        "documents whose column values are among these (e.g. {lang: [en]}, or {topic: [0, 3]} with the domain "
        "stage on); empty = every document"))
    weight: float = Field(gt=0.0, description="share of the training tokens (weights are normalized to sum 1)")
    max_epochs: float = Field(4.0, gt=0.0, description="at most this many passes over the source's tokens")


class MixtureConfig(StrictModel):
    enabled: bool = True
    token_budget: int = Field(100_000, ge=1, description="training tokens to sample (EOS tokens included)")
    sources: list[MixtureSource] = Field(default_factory=lambda: [MixtureSource(name="all", weight=1.0)])
    validation_fraction: float = Field(0.05, ge=0.0, lt=1.0, description=(
        "documents held out for validation (by a hash of the seed and the id), never in training"))
    seed: int = Field(0, ge=0, description="which pieces are drawn (and, unless order_seed is set, their order)")
    order_seed: int | None = Field(None, ge=0, description=(
        "the stream's order, if not `seed`'s: an ablation varies the batch order apart from the draw"))
    shard_tokens: int = Field(1 << 26, ge=1024, description="tokens per output shard at most")
    chunk_tokens: int = Field(1024, ge=1, description=(
        "the draw's unit: documents are cut into pieces of this many tokens (the last shorter), each drawn on its "
        "own, so no giant page decides a small budget's data; a training window spans a cut only where two pieces "
        "meet, as it spans documents"))

    @field_validator("sources")
    @classmethod
    def _distinct_names(cls, sources: list[MixtureSource]) -> list[MixtureSource]:
        names = [source.name for source in sources]
        if not sources or len(set(names)) != len(names):
            raise ValueError(f"sources need distinct names, got {names}")
        return sources

    @property
    def stream_seed(self) -> int:
        return self.seed if self.order_seed is None else self.order_seed

    def weights(self) -> dict[str, float]:
        """Requested shares, normalized to sum 1 (a recipe may write 3 and 1 for 75% / 25%)."""
        total = sum(source.weight for source in self.sources)
        return {source.name: source.weight / total for source in self.sources}
