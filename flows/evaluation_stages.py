"""The evaluation side's stages (tasks.evaluation.stage) as Prefect subflows."""
from __future__ import annotations

from prefect import flow

from configs.evaluation import EvalSuiteConfig
from configs.schema import Recipe
from flows.stage_runner import run_stage
from flows.stage_task_runner import PipelineCluster
from storage.stage_result import StageResult
from tasks.evaluation.stage import DecontaminateStage, EvalSuiteStage


@flow(name="eval-suite", log_prints=True, task_runner=PipelineCluster())
def eval_suite_stage_flow(recipe: Recipe, config: EvalSuiteConfig) -> StageResult:
    return run_stage(recipe, EvalSuiteStage(recipe, config))


@flow(name="decontaminate", log_prints=True, task_runner=PipelineCluster())
def decontaminate_stage_flow(recipe: Recipe, documents: StageResult, suite: StageResult) -> StageResult:
    """Remove the documents of `documents` (a stage summary) that share an n-gram with `suite`'s texts."""
    return run_stage(recipe, DecontaminateStage(documents, suite))
