"""The deployments file (`configs/deployments.yaml`): which flow, which recipe with which overrides, schedules,
tags and a concurrency limit, one entry per Prefect deployment `sluice server` serves."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, model_validator

from configs.base import StrictModel


class DeploymentSpec(StrictModel):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    flow: Literal["curation", "train", "ablation", "sweep", "mix-search"] = Field(description=(
        "curation: a recipe; train: a training config; ablation: an ablation file; sweep: a sweep file; "
        "mix-search: a mixture search file"))
    recipe: str = Field(min_length=1, description="the recipe (or training config) YAML, relative to the repo root")
    overrides: dict = Field(default_factory=dict, description="merged into the recipe: the run form's defaults")
    description: str | None = None
    interval_s: float | None = Field(None, gt=0, description="run every this many seconds")
    cron: str | None = Field(None, description="or a cron schedule, e.g. '0 3 * * *'")
    timezone: str = "UTC"
    paused: bool = Field(False, description="schedules start paused (turn them on in the UI)")
    tags: list[str] = Field(default_factory=list)
    concurrency_limit: int | None = Field(1, ge=1, description=(
        "runs of this deployment at once; more wait for a slot (1: a schedule firing during a manual run waits)"))

    @model_validator(mode="after")
    def _one_schedule(self) -> "DeploymentSpec":
        if self.interval_s is not None and self.cron is not None:
            raise ValueError(f"deployment {self.name}: give `interval_s` or `cron`, not both")
        return self


class DeploymentsFile(StrictModel):
    deployments: list[DeploymentSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> "DeploymentsFile":
        names = [spec.name for spec in self.deployments]
        if len(set(names)) != len(names):
            raise ValueError(f"deployment names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
        return self


def load_deployments(path: str | Path) -> DeploymentsFile:
    return DeploymentsFile.model_validate(yaml.safe_load(Path(path).read_text()))
