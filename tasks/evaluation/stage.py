"""Two stages of the ablation's evaluation side:

- `EvalSuiteStage`: the held-out texts of every domain and their n-grams (one call), from the suite config and
  the source files;
- `DecontaminateStage`: a document stage's output without the documents that share an n-gram with the suite (one
  call per shard), with every removal listed under `removed/`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

from configs.evaluation import EvalSuiteConfig
from configs.schema import Recipe
from storage.fs import file_fingerprint
from storage.locations import recipe_data_path
from storage.manifest import ShardEntry, sha256_file
from storage.stage_figures import EvalSuiteFigures
from storage.stage_result import StageResult, parent_of, stage_file, stage_shard_urls
from tasks.evaluation.decontaminate import DecontaminateJob
from tasks.evaluation.suite import NGRAMS_FILE, SUITE_FILE, source_files
from tasks.evaluation.task import build_suite_call, decontaminate_shard_task
from tasks.extract.langid import recipe_lid_model
from tasks.stage import StageContext, StageOutput, StageSpec, Steps, shard_entry, summed_stats
from tasks.stage_report import StageReport
from tasks.stats import StageStats


@dataclass(frozen=True)
class EvalSuiteStage:
    recipe: Recipe
    suite: EvalSuiteConfig

    @cached_property
    def config(self) -> EvalSuiteConfig:
        """`{data_dir}` expanded and paths made absolute (workers may run elsewhere)."""
        return self.suite.model_copy(update={"domains": {
            name: domain.model_copy(update={"paths": [recipe_data_path(path, self.recipe.data_dir)
                                                      for path in domain.paths]})
            for name, domain in self.suite.domains.items()}})

    @cached_property
    def lid_model(self) -> str | None:
        """The language-identification model, when a domain selects by language."""
        if not any(domain.languages for domain in self.config.domains.values()):
            return None
        return recipe_lid_model(self.recipe)

    @cached_property
    def spec(self) -> StageSpec:
        sources = sorted({path for domain in self.config.domains.values() for path in source_files(domain)})
        return StageSpec(name="eval_suite", config=self.config.model_dump(mode="json"),
                         parents=[file_fingerprint(path) for path in sources + ([self.lid_model] if self.lid_model
                                                                                 else [])],
                         code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        result = steps.call(build_suite_call, self.config, stage.stage_dir, self.lid_model, label="build-eval-suite",
                            on_cluster=True)
        files = [ShardEntry(path=name, bytes=os.path.getsize(stage.path(name)), sha256=sha256_file(stage.path(name)),
                            documents=sum(d["documents"] for d in result["domains"].values()) if name == SUITE_FILE
                            else 0) for name in (SUITE_FILE, NGRAMS_FILE)]
        documents = files[0].documents
        rows = [{"domain": name, **row} for name, row in result["domains"].items()]
        return StageOutput(shards=files, stats=StageStats(candidates=documents, documents_out=documents),
                           figures=EvalSuiteFigures(**result), report=StageReport(tables={"domains": rows}))


@dataclass(frozen=True)
class DecontaminateStage:
    """Remove the documents of `documents` (a stage summary) that share an n-gram with `suite`'s texts."""
    documents: StageResult
    suite: StageResult

    @cached_property
    def spec(self) -> StageSpec:
        return StageSpec(name="decontaminate", config={}, parents=[parent_of(self.documents), parent_of(self.suite)],
                         code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        ngrams = stage_file(self.suite, NGRAMS_FILE)
        jobs = [DecontaminateJob(url, stage.path("shards", os.path.basename(url)),
                                 stage.path("removed", os.path.basename(url)), ngrams)
                for url in stage_shard_urls(self.documents)]
        steps.logger.info("decontaminate: %d shards -> %s", len(jobs), stage.stage_dir)
        results = steps.map(decontaminate_shard_task, jobs, "decontaminate")
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in results],
                           stats=summed_stats(results), task_results=results)
