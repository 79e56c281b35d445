"""Two stages of the ablation's evaluation side:

- `eval_suite`: the held-out texts of every domain and their n-grams (one task), from the suite config and the
  source files;
- `decontaminate`: a document stage's output without the documents that share an n-gram with the suite (one task
  per shard), with every removal listed under `removed/`.
"""
from __future__ import annotations

import os

from prefect import flow, task

from configs.evaluation import EvalSuiteConfig
from configs.schema import Recipe
from flows.reporting import StageReport
from flows.stage_runner import (StageContext, StageOutput, StageSpec, map_tasks, one_call, run_stage, shard_entry,
                                stage_logger, summed_stats)
from storage.fs import file_fingerprint, local_path
from storage.locations import expand_data_dir
from storage.manifest import ShardEntry, sha256_file
from storage.stage_figures import EvalSuiteFigures
from storage.stage_result import StageResult, parent_of, stage_file, stage_shard_urls
from tasks.evaluation.decontaminate import DecontaminateJob
from tasks.evaluation.suite import NGRAMS_FILE, SUITE_FILE, source_files
from tasks.evaluation.task import build_suite_call, decontaminate_shard_task
from tasks.extract.langid import resolve_model_path
from tasks.stats import StageStats

build_suite_task = task(name="build-eval-suite", retries=1, retry_delay_seconds=2)(build_suite_call)


def resolved_suite_config(recipe: Recipe, config: EvalSuiteConfig) -> EvalSuiteConfig:
    """`{data_dir}` expanded and paths made absolute (workers may run elsewhere)."""
    data_dir = local_path(recipe.data_dir) if recipe.data_dir else None
    return config.model_copy(update={"domains": {
        name: domain.model_copy(update={"paths": [local_path(expand_data_dir(path, data_dir)) for path in domain.paths]})
        for name, domain in config.domains.items()}})


@flow(name="eval-suite", log_prints=True)
def eval_suite_stage_flow(recipe: Recipe, config: EvalSuiteConfig) -> StageResult:
    config = resolved_suite_config(recipe, config)
    lid_model = None
    if any(domain.languages for domain in config.domains.values()):
        data_dir = local_path(recipe.data_dir) if recipe.data_dir else None
        lid_model = local_path(resolve_model_path(recipe.extract.langid.model_path, data_dir))
    sources = sorted({path for domain in config.domains.values() for path in source_files(domain)})
    spec = StageSpec(name="eval_suite", config=config.model_dump(mode="json"),
                     parents=[file_fingerprint(path) for path in sources + ([lid_model] if lid_model else [])],
                     code_root=__name__)

    def produce(stage: StageContext) -> StageOutput:
        result = one_call(build_suite_task, config, stage.stage_dir, lid_model, on_cluster=True)
        files = [ShardEntry(path=name, bytes=os.path.getsize(stage.path(name)), sha256=sha256_file(stage.path(name)),
                            documents=sum(d["documents"] for d in result["domains"].values()) if name == SUITE_FILE
                            else 0) for name in (SUITE_FILE, NGRAMS_FILE)]
        documents = files[0].documents
        rows = [{"domain": name, **row} for name, row in result["domains"].items()]
        return StageOutput(shards=files, stats=StageStats(candidates=documents, documents_out=documents),
                           figures=EvalSuiteFigures(**result), report=StageReport(tables={"domains": rows}))

    return run_stage(recipe, spec, produce)


@flow(name="decontaminate", log_prints=True)
def decontaminate_stage_flow(recipe: Recipe, documents: StageResult, suite: StageResult) -> StageResult:
    """Remove the documents of `documents` (a stage summary) that share an n-gram with `suite`'s texts."""
    spec = StageSpec(name="decontaminate", config={}, parents=[parent_of(documents), parent_of(suite)],
                     code_root=__name__)
    ngrams = stage_file(suite, NGRAMS_FILE)

    def produce(stage: StageContext) -> StageOutput:
        jobs = [DecontaminateJob(url, stage.path("shards", os.path.basename(url)),
                                 stage.path("removed", os.path.basename(url)), ngrams)
                for url in stage_shard_urls(documents)]
        stage_logger().info("decontaminate: %d shards -> %s", len(jobs), stage.stage_dir)
        results = map_tasks(decontaminate_shard_task, jobs, "decontaminate")
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in results],
                           stats=summed_stats(results), task_results=results)

    return run_stage(recipe, spec, produce)


