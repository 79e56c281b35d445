"""The recipe: one YAML file validated by these models before any work starts.

Every model forbids unknown keys, so a typo fails with the field's full path
(`extract.langid.min_scor: Extra inputs are not permitted`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from configs.base import StrictModel
from configs.dedup import DedupConfig
from configs.domains import DomainsConfig
from configs.html import HtmlTextConfig
from configs.mixture import MixtureConfig
from configs.parsing import parse_config, read_yaml
from configs.quality import QualityConfig
from configs.tokenizer import TokenizerConfig
from configs.training import TrainingConfig

LanguageCode = Annotated[str, Field(pattern=r"^[a-z]{2,3}(_[A-Za-z]+)?$")]


class CrawlListing(StrictModel):
    """A Common Crawl `warc.paths.gz` (or `wet.paths.gz`) listing: relative paths joined onto `base_url`."""
    url: str = Field(min_length=1, description="the listing: local path or fsspec URL, gzipped (.gz) or plain text")
    base_url: str = Field("https://data.commoncrawl.org/", min_length=1, description=(
        "prefix of every listed path: https://data.commoncrawl.org/, s3://commoncrawl/ or a local mirror"))
    limit: int | None = Field(None, ge=1, description="take the first N listed files")
    sample: int | None = Field(None, ge=1, description="or N files drawn at random with `seed`")
    seed: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _limit_or_sample(self) -> "CrawlListing":
        if self.limit is not None and self.sample is not None:
            raise ValueError("give `limit` (the first N files) or `sample` (N seeded random files), not both")
        return self


class InputConfig(StrictModel):
    paths: list[str] = Field(default_factory=list, description="files, directories or globs; local paths or fsspec URLs")
    listing: CrawlListing | None = Field(None, description="or a Common Crawl listing of WARC files")
    source: str = Field("commoncrawl", min_length=1, description="value of the `source` column")
    storage_options: dict = Field(default_factory=dict, description="passed to fsspec (e.g. `anon: true` for S3)")

    @model_validator(mode="after")
    def _paths_or_listing(self) -> "InputConfig":
        if bool(self.paths) == (self.listing is not None):
            raise ValueError("give `paths` (files, directories or globs) or a `listing`, exactly one of them")
        return self


class LangIdConfig(StrictModel):
    model_path: str | None = Field(None, description="fastText lid.176 model; default <data_dir>/lid/lid.176.ftz")
    languages: list[LanguageCode] = Field(default_factory=list, description="keep only these; empty keeps all")
    min_score: float = Field(0.3, ge=0.0, le=1.0, description="drop documents whose top language score is lower")
    max_chars: int = Field(2000, gt=0, description="characters of each document given to the classifier "
                                                  "(cost grows with it; 2000 gave the same labels as 8000 on the demo)")


class UrlFilterConfig(StrictModel):
    blocked_domains: list[str] = Field(default_factory=list, description="a domain blocks itself and its subdomains")
    blocklist_files: list[str] = Field(default_factory=list,
                                       description="one domain per line, or Adblock `||domain^` rules; .gz allowed; "
                                                   "`{data_dir}` stands for the shared data directory")
    blocked_url_words: list[str] = Field(default_factory=list, description="drop URLs containing any of these")


class ExtractConfig(StrictModel):
    html: HtmlTextConfig = Field(default_factory=HtmlTextConfig)
    langid: LangIdConfig = Field(default_factory=LangIdConfig)
    url_filter: UrlFilterConfig = Field(default_factory=UrlFilterConfig)
    max_payload_bytes: int = Field(8 << 20, gt=0, description="larger HTTP payloads are skipped as `oversize_payload`")
    min_text_chars: int = Field(1, ge=1, description="shorter extracted texts (stripped) are dropped as `too_short`")


class DaskConfig(StrictModel):
    address: str | None = Field(None, description="tcp://host:port of an existing scheduler, or tls://host:port (its "
                                                  "certificates from Dask's configuration: docs/operations.md, "
                                                  "'Multi-host mode'); None starts a LocalCluster when a stage "
                                                  "first needs it")
    n_workers: int | None = Field(None, gt=0, description="LocalCluster worker processes; None = number of cores")
    threads_per_worker: int = Field(1, gt=0)


class MlflowConfig(StrictModel):
    experiment: str = Field("sluice", min_length=1)
    tracking_uri: str | None = Field(None, description="None: MLFLOW_TRACKING_URI, else SQLite in the state dir")


class Recipe(StrictModel):
    name: str = Field(min_length=1)
    store: str = Field(".state/store", description="root of the content-addressed stage store (path or fsspec URL)")
    data_dir: str | None = Field(None, description="shared third-party data; default SLUICE_DATA_DIR or ../shared/data")
    input: InputConfig
    extract: ExtractConfig = Field(default_factory=ExtractConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)
    domains: DomainsConfig = Field(default_factory=DomainsConfig)
    tokenizer: TokenizerConfig = Field(default_factory=TokenizerConfig)
    mixture: MixtureConfig = Field(default_factory=MixtureConfig)
    train: TrainingConfig = Field(default_factory=lambda: TrainingConfig(enabled=False), description=(
        "a training run on the mixture (data, vocabulary, checkpoints and MLflow are filled in by the flow)"))
    dask: DaskConfig = Field(default_factory=DaskConfig)
    mlflow: MlflowConfig = Field(default_factory=MlflowConfig)

    @field_validator("store")
    @classmethod
    def _store_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("store must name a directory or URL")
        return value

    def sized_training(self) -> TrainingConfig:
        """The `train` section with the vocabulary the flow gives it (the tokenizer's, unless the model names one):
        what `sluice plan` and the pre-flight fit check plan."""
        vocab_size = self.train.model.vocab_size or self.tokenizer.vocab_size
        return self.train.model_copy(update={"model": self.train.model.model_copy(update={"vocab_size": vocab_size})})


def load_recipe(path: str | Path) -> Recipe:
    return parse_recipe(read_yaml(path, "recipe"), origin=str(path))


def load_training_plan_input(path: str | Path) -> TrainingConfig:
    """A training file, or a curation recipe's (a file with an `input`) `train` section as the flow sizes it."""
    raw = read_yaml(path, "training file or recipe")
    if isinstance(raw, dict) and "input" in raw:
        return parse_recipe(raw, origin=str(path)).sized_training()
    return parse_config(TrainingConfig, raw, str(path), "training file")


def parse_recipe(raw: object, origin: str = "<recipe>") -> Recipe:
    return parse_config(Recipe, raw, origin, "recipe")
