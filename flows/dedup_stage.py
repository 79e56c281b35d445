"""The dedup stage as a Prefect subflow: the steps of `tasks/dedup/steps.py`, each a Prefect task run of Dask calls
(the clustering a Prefect task in the flow process), timed per step; the steps' `work/` folder is deleted once the
output is complete."""
from __future__ import annotations

import time

from prefect import flow, task

from configs.schema import Recipe
from flows.dedup_report import cluster_sizes_chart, dedup_report, s_curve_chart
from flows.stage_runner import (StageContext, StageOutput, StageSpec, map_tasks, one_call, run_stage, shard_entry,
                                stage_logger, summed_stats)
from storage.fs import remove_folder
from storage.stage_figures import DedupFigures
from storage.stage_result import StageResult, parent_of, stage_shard_bytes, stage_shard_urls
from tasks.dedup.steps import dedup_steps
from tasks.dedup.task import clusters_call
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
        shard_urls = stage_shard_urls(parent)
        stage_logger().info("dedup: %d document shards, %d buckets -> %s", len(shard_urls), config.buckets,
                              stage.stage_dir)
        steps: list[dict] = []
        charts = s_curve_chart(config)

        def map_step(name: str, function, jobs: list, sizes: list[int] | None = None, **arguments) -> list[dict]:
            """One step as one Prefect task run of Dask calls, timed; the clustering as a Prefect task in this
            process (its passes fan out to the cluster themselves)."""
            started, seconds_before = time.perf_counter(), call_seconds()
            if function is clusters_call:
                results = [one_call(clusters_task, job, **arguments) for job in jobs]
            else:
                results = map_tasks(function, jobs, f"dedup {name}", job_sizes=sizes, **arguments)
            steps.append({"step": name, "tasks": len(results), "wall_seconds": round(time.perf_counter() - started, 3),
                          "task_seconds": round(call_seconds() - seconds_before, 3),   # clustering's passes too
                          "worker_peak_rss_mb": max((r["worker_peak_rss_mb"] for r in results
                                                     if "worker_peak_rss_mb" in r), default=None)})
            return results

        done = dedup_steps(shard_urls, stage.stage_dir, config, map_step, stage_shard_bytes(parent))
        charts |= cluster_sizes_chart(done.clusters)
        shuffled = remove_folder(stage.path("work"))
        stats = summed_stats(done.applied)
        stats.seconds = sum(step["task_seconds"] for step in steps)   # every step's tasks, not only apply's
        figures = DedupFigures(**done.figures(), work_bytes=shuffled["bytes"], work_files=shuffled["files"])
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in done.applied], stats=stats,
                           task_results=done.applied, figures=figures,
                           report=dedup_report(config, stats, figures, done.clusters, steps, charts,
                                               stage.report_dir))

    return run_stage(recipe, spec, produce)
