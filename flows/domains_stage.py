"""The domain stage (tasks.domains.stage) as a Prefect subflow."""
from __future__ import annotations

from prefect import flow

from configs.schema import Recipe
from flows.stage_runner import run_stage
from flows.stage_task_runner import PipelineCluster
from storage.stage_result import StageResult
from tasks.domains.stage import DomainStage


@flow(name="domains", log_prints=True, task_runner=PipelineCluster())
def domains_stage_flow(recipe: Recipe, documents: StageResult) -> StageResult:
    """Give every document of `documents` (a stage summary) a topic and a format, with a card per cluster."""
    return run_stage(recipe, DomainStage(recipe, documents))
