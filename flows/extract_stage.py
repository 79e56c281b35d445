"""The extraction stage as a Prefect subflow: one mapped task per WARC shard on the Dask task runner."""
from __future__ import annotations

import hashlib
import os
import time

from prefect import flow, get_run_logger, unmapped
from prefect.futures import as_completed

from configs.schema import ExtractConfig, Recipe
from flows.reporting import publish_stage_report
from storage.fs import WARC_SUFFIXES, expand_inputs, file_fingerprint, local_path
from storage.locations import shared_data_dir
from storage.manifest import Manifest, ShardEntry
from storage.stage_store import StageStore, source_digest, stage_fingerprint
from tasks.extract.langid import resolve_model_path
from tasks.extract.shard import ShardJob
from tasks.extract.task import extract_shard_task
from tasks.stats import StageStats

STAGE = "extract"
SHARD_SUFFIXES = sorted(WARC_SUFFIXES, key=len, reverse=True)  # longest first: `.warc.gz` before `.warc`


@flow(name="extract", log_prints=True)
def extract_stage_flow(recipe: Recipe) -> dict:
    """Extract every input file into a document shard; skipped entirely when the stage's manifest exists."""
    logger = get_run_logger()
    inputs = expand_inputs(recipe.input.paths, storage_options=recipe.input.storage_options)
    data_dir = local_path(recipe.data_dir) if recipe.data_dir else None
    lid_model = local_path(resolve_model_path(recipe.extract.langid.model_path, data_dir))
    extract_config = _with_data_dir(recipe.extract, data_dir)
    config = extract_config.model_dump(mode="json") | {"source": recipe.input.source}
    # What the output depends on besides the config: the WARC files, the language model and the blocklists.
    input_identities = [file_fingerprint(url, recipe.input.storage_options) for url in inputs]
    model_identities = [file_fingerprint(path) for path in (lid_model, *extract_config.url_filter.blocklist_files)]
    code_version = source_digest("tasks.extract", "tasks.stats", "storage")
    fingerprint = stage_fingerprint(STAGE, config, input_identities + model_identities, code_version)
    store = StageStore(recipe.store)
    cached = store.find(STAGE, fingerprint)
    if cached is not None:
        logger.info("extract: %d shards already done in %s (fingerprint %s), skipping",
                    len(cached.shards), store.stage_dir(STAGE, fingerprint), fingerprint)
        return publish_stage_report(recipe, cached, store.manifest_url(STAGE, fingerprint), [], cached=True)

    stage_dir = store.stage_dir(STAGE, fingerprint)
    jobs = [ShardJob(url, f"{stage_dir}/shards/{_shard_name(url)}.parquet", recipe.input.source, lid_model,
                     tuple(sorted(recipe.input.storage_options.items())))
            for url in inputs]
    logger.info("extract: %d input files -> %s", len(jobs), stage_dir)
    started = time.perf_counter()
    futures = extract_shard_task.map(jobs, config=unmapped(extract_config))
    results, total = [], StageStats()
    for done, future in enumerate(as_completed(futures), start=1):
        shard = future.result()
        results.append(shard)
        total.merge(StageStats.from_dict(shard))
        logger.info("extract: %d/%d shards, %d records, %d docs kept, %d dropped, %d problems",
                    done, len(jobs), total.records_read, total.documents_out, sum(total.drops.values()),
                    sum(total.problems.values()))
    results.sort(key=lambda shard: shard["input"])
    wall = time.perf_counter() - started
    manifest = Manifest(
        stage=STAGE, fingerprint=fingerprint, config=config, code_version=code_version,
        parents=input_identities + model_identities,
        shards=[ShardEntry(path=os.path.relpath(shard["output"], stage_dir), bytes=shard["output_bytes"],
                           sha256=shard["output_sha256"], documents=shard["documents_out"],
                           source=shard["input"]) for shard in results],
        stats=total.to_dict() | {"wall_seconds": round(wall, 3),
                                 "docs_per_second_wall": round(total.candidates / wall, 2) if wall else 0.0},
    )
    manifest_url = store.publish(manifest)
    return publish_stage_report(recipe, manifest, manifest_url, results, cached=False)


def _with_data_dir(config: ExtractConfig, data_dir: str | None) -> ExtractConfig:
    """Expand `{data_dir}` in blocklist paths (so recipes need not hard-code where the shared data lives) and make
    local paths absolute, since Dask workers may run in another directory."""
    files = []
    for path in config.url_filter.blocklist_files:
        if "{data_dir}" in path:
            path = path.replace("{data_dir}", data_dir or str(shared_data_dir()))
        files.append(local_path(path))
    return config.model_copy(update={"url_filter": config.url_filter.model_copy(update={"blocklist_files": files})})


def _shard_name(url: str) -> str:
    """Input file name without its archive suffix, plus a short hash of the full URL so equal names don't clash."""
    name = os.path.basename(url)
    for suffix in SHARD_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return f"{name}-{hashlib.sha1(url.encode()).hexdigest()[:8]}"
