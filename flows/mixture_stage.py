"""The mixture stage (tasks.mixture.stage) as a Prefect subflow: the mix one Prefect task in the flow process,
whose passes fan out to the Dask cluster."""
from __future__ import annotations

from prefect import flow

from configs.schema import Recipe
from flows.stage_runner import run_stage
from flows.stage_task_runner import PipelineCluster
from storage.stage_result import StageResult
from tasks.mixture.stage import MixtureStage


@flow(name="mixture", log_prints=True, task_runner=PipelineCluster())
def mixture_stage_flow(recipe: Recipe, tokens: StageResult, documents: StageResult, vocab_size: int) -> StageResult:
    return run_stage(recipe, MixtureStage(recipe, tokens, documents, vocab_size))
