"""The extraction stage as a Prefect subflow: one mapped task per WARC shard on the Dask task runner."""
from __future__ import annotations

import hashlib
import os

from prefect import flow

from configs.schema import ExtractConfig, Recipe
from flows.stage_runner import (StageContext, StageOutput, StageSpec, map_tasks, run_stage, shard_entry, stage_logger,
                                summed_stats)
from storage.crawl_listing import input_urls
from storage.fs import WARC_SUFFIXES, file_fingerprint, local_path
from storage.locations import expand_data_dir
from storage.stage_result import StageResult
from tasks.extract.langid import resolve_model_path
from tasks.extract.shard import ShardJob
from tasks.extract.task import extract_shard_task

STAGE = "extract"
SHARD_SUFFIXES = sorted(WARC_SUFFIXES, key=len, reverse=True)  # longest first: `.warc.gz` before `.warc`


@flow(name="extract", log_prints=True)
def extract_stage_flow(recipe: Recipe) -> StageResult:
    """Extract every input file into a document shard; skipped entirely when the stage's manifest exists."""
    inputs = input_urls(recipe.input)
    data_dir = local_path(recipe.data_dir) if recipe.data_dir else None
    lid_model = local_path(resolve_model_path(recipe.extract.langid.model_path, data_dir))
    extract_config = _with_data_dir(recipe.extract, data_dir)
    # What the output depends on besides the config: the WARC files, the language model and the blocklists.
    input_identities = [file_fingerprint(url, recipe.input.storage_options) for url in inputs]
    model_identities = [file_fingerprint(path) for path in (lid_model, *extract_config.url_filter.blocklist_files)]
    spec = StageSpec(name=STAGE, config=extract_config.model_dump(mode="json") | {"source": recipe.input.source},
                     parents=input_identities + model_identities,
                     code_root=__name__)

    def produce(stage: StageContext) -> StageOutput:
        jobs = [ShardJob(url, stage.path("shards", f"{_shard_name(url)}.parquet"), recipe.input.source, lid_model,
                         tuple(sorted(recipe.input.storage_options.items())))
                for url in inputs]
        stage_logger().info("extract: %d input files -> %s", len(jobs), stage.stage_dir)
        results = map_tasks(extract_shard_task, jobs, "extract",
                            job_sizes=[identity["size"] for identity in input_identities], config=extract_config)
        return StageOutput(shards=[shard_entry(stage.stage_dir, shard) for shard in results],
                           stats=summed_stats(results), task_results=results)

    return run_stage(recipe, spec, produce)


def _with_data_dir(config: ExtractConfig, data_dir: str | None) -> ExtractConfig:
    """Expand `{data_dir}` in blocklist paths (so recipes need not hard-code where the shared data lives) and make
    local paths absolute, since Dask workers may run in another directory."""
    files = [local_path(expand_data_dir(path, data_dir)) for path in config.url_filter.blocklist_files]
    return config.model_copy(update={"url_filter": config.url_filter.model_copy(update={"blocklist_files": files})})


def _shard_name(url: str) -> str:
    """Input file name without its archive suffix, plus a short hash of the full URL so equal names don't clash."""
    name = os.path.basename(url)
    for suffix in SHARD_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return f"{name}-{hashlib.sha1(url.encode()).hexdigest()[:8]}"
