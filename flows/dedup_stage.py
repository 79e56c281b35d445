"""The dedup stage as a Prefect subflow: per-shard features, per-bucket reducers, one clustering task, per-bucket
repeated-paragraph counts, then per-shard output. Every step is a mapped task on the Dask task runner; the
steps talk through files in the stage's `work/` folder (deleted once the output is complete)."""
from __future__ import annotations

import os
import time

from prefect import flow, get_run_logger, task

from configs.schema import Recipe
from flows.dedup_report import cluster_sizes_chart, dedup_report, s_curve_chart
from flows.stage_runner import StageContext, StageOutput, StageSpec, map_tasks, run_stage, shard_entry, summed_stats
from storage.fs import remove_folder
from storage.stage_result import StageResult, parent_of, stage_shard_bytes, stage_shard_urls
from tasks.dedup.apply import ApplyJob
from tasks.dedup.features import part_name
from tasks.dedup.task import apply_task, clusters_call, edges_task, features_task, paragraphs_task, substrings_task
from tasks.fan_out import call_seconds

clusters_task = task(name="dedup-clusters", retries=1, retry_delay_seconds=2)(clusters_call)

STAGE = "dedup"


@flow(name="dedup", log_prints=True)
def dedup_stage_flow(recipe: Recipe, parent: StageResult) -> StageResult:
    """Deduplicate the documents of `parent` (a stage summary, e.g. extraction's)."""
    config = recipe.dedup
    spec = StageSpec(name=STAGE, config=config.model_dump(mode="json"), parents=[parent_of(parent)],
                     code_root=__name__)

    def produce(stage: StageContext) -> StageOutput:
        logger = get_run_logger()
        shard_urls = stage_shard_urls(parent)
        parts = [part_name(index) for index in range(len(shard_urls))]
        work = stage.path("work")
        buckets = list(range(config.buckets))
        logger.info("dedup: %d document shards, %d buckets -> %s", len(parts), len(buckets), stage.stage_dir)

        steps: list[dict] = []
        charts = s_curve_chart(config)

        def step(name: str, run):
            started, seconds_before = time.perf_counter(), call_seconds()
            results = run()
            steps.append({"step": name, "tasks": len(results), "wall_seconds": round(time.perf_counter() - started, 3),
                          "task_seconds": round(call_seconds() - seconds_before, 3),   # clustering's passes too
                          "worker_peak_rss_mb": max((r["worker_peak_rss_mb"] for r in results
                                                     if "worker_peak_rss_mb" in r), default=None)})
            return results

        shard_bytes = stage_shard_bytes(parent)
        features = step("features", lambda: map_tasks(features_task, list(zip(shard_urls, parts)),
                                                      "dedup features", job_sizes=shard_bytes, work=work,
                                                      config=config))
        edges = step("edges", lambda: map_tasks(edges_task, buckets, "dedup edges", work=work, parts=parts,
                                                config=config))
        clusters = step("clusters", lambda: [clusters_task(work, parts, shard_urls, config)])[0]   # fans out itself
        charts |= cluster_sizes_chart(clusters)
        paragraphs = step("paragraphs", lambda: map_tasks(paragraphs_task, buckets, "dedup paragraphs", work=work,
                                                          parts=parts, config=config)
                          if config.paragraphs.enabled else [])
        substrings = step("substrings", lambda: map_tasks(substrings_task, buckets, "dedup substrings", work=work,
                                                          parts=parts, config=config)
                          if config.substring.enabled else [])
        jobs = [ApplyJob(url, part, stage.path("shards", os.path.basename(url)),
                         stage.path("removed", os.path.basename(url)))
                for url, part in zip(shard_urls, parts)]
        applied = step("apply", lambda: map_tasks(apply_task, jobs, "dedup apply", job_sizes=shard_bytes, work=work,
                                                  config=config))

        shuffled = remove_folder(work)
        stats = summed_stats(applied)
        stats.seconds = sum(step["task_seconds"] for step in steps)   # every step's tasks, not only apply's
        stats.notes.update({
            "documents_without_shingles": sum(result["without_shingles"] for result in features),
            "exact_edges": sum(result["exact_edges"] for result in edges),
            "candidate_pairs": sum(result["candidate_pairs"] for result in edges),
            "verified_pairs": sum(result["verified_pairs"] for result in edges),
            "clusters": clusters["clusters"],
            "documents_in_clusters": clusters["documents_in_clusters"],
            "propagation_rounds": clusters["propagation_rounds"],
            "distinct_paragraphs": sum(result["paragraphs"] for result in paragraphs),
            "repeated_paragraphs": sum(result["repeated_paragraphs"] for result in paragraphs),
            "repeated_windows": sum(result["repeated_windows"] for result in substrings),
            "work_bytes": shuffled["bytes"], "work_files": shuffled["files"],
        })
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in applied], stats=stats,
                           task_results=applied, report=dedup_report(config, stats, clusters, steps, charts,
                                                                    stage.report_dir))

    return run_stage(recipe, spec, produce)
