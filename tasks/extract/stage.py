"""The extraction stage: one call per WARC (or WET, ARC) file, each writing one document shard."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cached_property

from configs.schema import ExtractConfig, Recipe
from storage.crawl_listing import input_urls
from storage.fs import WARC_SUFFIXES, file_fingerprint
from storage.locations import recipe_data_path
from tasks.extract.langid import recipe_lid_model
from tasks.extract.model_files import model_identities
from tasks.extract.shard import ShardJob
from tasks.extract.task import extract_shard_task
from tasks.stage import StageContext, StageOutput, StageSpec, Steps, shard_entry, summed_stats

SHARD_SUFFIXES = sorted(WARC_SUFFIXES, key=len, reverse=True)  # longest first: `.warc.gz` before `.warc`


@dataclass(frozen=True)
class ExtractStage:
    """Extract every input file of `recipe.input` into a document shard."""
    recipe: Recipe

    @cached_property
    def inputs(self) -> list[str]:
        return input_urls(self.recipe.input)

    @cached_property
    def input_identities(self) -> list[dict]:
        return [file_fingerprint(url, self.recipe.input.storage_options) for url in self.inputs]

    @cached_property
    def lid_model(self) -> str:
        return recipe_lid_model(self.recipe)

    @cached_property
    def config(self) -> ExtractConfig:
        """`{data_dir}` expanded in blocklist paths (so recipes need not hard-code where the shared data lives) and
        local paths made absolute, since Dask workers may run in another directory."""
        extract = self.recipe.extract
        files = [recipe_data_path(path, self.recipe.data_dir) for path in extract.url_filter.blocklist_files]
        return extract.model_copy(update={"url_filter": extract.url_filter.model_copy(
            update={"blocklist_files": files})})

    @cached_property
    def spec(self) -> StageSpec:
        # What the output depends on besides the config and the code: the WARC files, the language model, the
        # blocklists and the extraction's own model files
        models = [file_fingerprint(path) for path in (self.lid_model, *self.config.url_filter.blocklist_files)] \
            + model_identities(self.config.html)
        return StageSpec(name="extract",
                         config=self.config.model_dump(mode="json") | {"source": self.recipe.input.source},
                         parents=self.input_identities + models, code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        source = self.recipe.input
        jobs = [ShardJob(url, stage.path("shards", f"{shard_name(url)}.parquet"), source.source, self.lid_model,
                         tuple(sorted(source.storage_options.items())))
                for url in self.inputs]
        steps.logger.info("extract: %d input files -> %s", len(jobs), stage.stage_dir)
        results = steps.map(extract_shard_task, jobs, "extract",
                            job_sizes=[identity["size"] for identity in self.input_identities], config=self.config)
        return StageOutput(shards=[shard_entry(stage.stage_dir, shard) for shard in results],
                           stats=summed_stats(results), task_results=results)


def shard_name(url: str) -> str:
    """Input file name without its archive suffix, plus a short hash of the full URL so equal names don't clash."""
    name = os.path.basename(url)
    for suffix in SHARD_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return f"{name}-{hashlib.sha1(url.encode()).hexdigest()[:8]}"
