"""The dedup stage (tasks.dedup.stage) as a Prefect subflow: each step a Prefect task run of Dask calls, the
clustering a Prefect task in the flow process."""
from __future__ import annotations

from prefect import flow

from configs.schema import Recipe
from flows.stage_runner import run_stage
from flows.stage_task_runner import PipelineCluster
from storage.stage_result import StageResult
from tasks.dedup.stage import DedupStage


@flow(name="dedup", log_prints=True, task_runner=PipelineCluster())
def dedup_stage_flow(recipe: Recipe, parent: StageResult) -> StageResult:
    """Deduplicate the documents of `parent` (a stage summary, e.g. extraction's)."""
    return run_stage(recipe, DedupStage(recipe, parent))
