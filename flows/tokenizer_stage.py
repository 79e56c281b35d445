"""The tokenizer stages (tasks.tokenize.stage) as Prefect subflows."""
from __future__ import annotations

from prefect import flow

from configs.schema import Recipe
from flows.stage_runner import run_stage
from flows.stage_task_runner import PipelineCluster
from storage.stage_result import StageResult
from tasks.tokenize.stage import GivenTokenizerStage, TokenizerStage, TokenizeStage


@flow(name="tokenizer", log_prints=True, task_runner=PipelineCluster())
def tokenizer_stage_flow(recipe: Recipe, documents: StageResult) -> StageResult:
    return run_stage(recipe, TokenizerStage(recipe, documents))


@flow(name="tokenizer-file", log_prints=True)
def tokenizer_file_stage_flow(recipe: Recipe, model_path: str) -> StageResult:
    """A given SentencePiece model published as a tokenizer stage, so downstream stages read it the same way."""
    return run_stage(recipe, GivenTokenizerStage(model_path))


@flow(name="tokenize", log_prints=True, task_runner=PipelineCluster())
def tokenize_stage_flow(recipe: Recipe, documents: StageResult, tokenizer: StageResult) -> StageResult:
    return run_stage(recipe, TokenizeStage(documents, tokenizer))
