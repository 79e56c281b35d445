"""The extraction stage (tasks.extract.stage) as a Prefect subflow: one call per WARC shard on the Dask task
runner."""
from __future__ import annotations

from prefect import flow

from configs.schema import Recipe
from flows.stage_runner import run_stage
from flows.stage_task_runner import PipelineCluster
from storage.stage_result import StageResult
from tasks.extract.stage import ExtractStage


@flow(name="extract", log_prints=True, task_runner=PipelineCluster())
def extract_stage_flow(recipe: Recipe) -> StageResult:
    """Extract every input file into a document shard; skipped entirely when the stage's manifest exists."""
    return run_stage(recipe, ExtractStage(recipe))
