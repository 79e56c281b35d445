"""The quality stages (tasks.quality.stage) as Prefect subflows."""
from __future__ import annotations

from prefect import flow

from configs.schema import Recipe
from flows.stage_runner import run_stage
from flows.stage_task_runner import PipelineCluster
from storage.stage_result import StageResult
from tasks.quality.stage import QualityFilterStage, QualityModelsStage, QualityScoresStage


@flow(name="quality-models", log_prints=True, task_runner=PipelineCluster())
def quality_models_stage_flow(recipe: Recipe, raw_documents: StageResult) -> StageResult:
    return run_stage(recipe, QualityModelsStage(recipe, raw_documents))


@flow(name="quality-scores", log_prints=True, task_runner=PipelineCluster())
def quality_scores_stage_flow(recipe: Recipe, documents: StageResult, models: StageResult) -> StageResult:
    return run_stage(recipe, QualityScoresStage(recipe, documents, models))


@flow(name="quality-filter", log_prints=True, task_runner=PipelineCluster())
def quality_filter_stage_flow(recipe: Recipe, scores: StageResult) -> StageResult:
    return run_stage(recipe, QualityFilterStage(recipe, scores))
