"""The domain stage: the final documents again, each with a `topic` and a `format` (tasks/domains/model.py), and a
card per cluster (its size in documents and words, top terms or distinctive statistics, three examples) for a person
to name the clusters. Steps: a sample per shard, one fit, an assignment per shard."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

from configs.schema import Recipe
from storage.fs import remove_folder
from storage.stage_result import StageResult, parent_of, stage_shard_urls
from tasks.domains.cards import cards_markdown, cards_tables
from tasks.stage import StageContext, StageOutput, StageSpec, Steps, shard_entry, summed_stats
from tasks.stage_report import StageReport

MODEL_FILE = "domains.npz"


@dataclass(frozen=True)
class DomainStage:
    """Give every document of `parent` (a document stage's summary) a topic and a format."""
    recipe: Recipe
    parent: StageResult

    @cached_property
    def spec(self) -> StageSpec:
        return StageSpec(name="domains", config=self.recipe.domains.model_dump(mode="json"),
                         parents=[parent_of(self.parent)], code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        from tasks.domains.task import DomainJob, assign_shard_task, fit_call, sample_shard_task

        config = self.recipe.domains
        jobs = [DomainJob(url, stage.path("work", "sample", os.path.basename(url)),
                          stage.path("shards", os.path.basename(url))) for url in stage_shard_urls(self.parent)]
        documents = self.parent["stats"]["documents_out"]
        steps.logger.info("domains: %d shards, %d documents, a sample of about %d -> %s", len(jobs), documents,
                          config.sample_documents, stage.stage_dir)
        steps.map(sample_shard_task, jobs, "domains sample", share=config.sample_documents / max(1, documents),
                  seed=config.seed, hash_features=config.hash_features)
        model_url = stage.path(MODEL_FILE)
        fitted = steps.call(fit_call, [job.sample_url for job in jobs], model_url, config, label="domains-fit",
                            on_cluster=True)
        results = steps.map(assign_shard_task, jobs, "domains assign", model_url=model_url)
        remove_folder(stage.path("work"))
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in results],
                           stats=summed_stats(results), task_results=results,
                           report=StageReport(markdown=cards_markdown(fitted, results),
                                              tables=cards_tables(fitted, results)))
