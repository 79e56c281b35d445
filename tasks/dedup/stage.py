"""The dedup stage: the steps of `tasks/dedup/steps.py`, each timed; the clustering one call in the process that
runs the stage (its passes fan out to the cluster); the steps' `work/` folder deleted once the output is
complete."""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property

from configs.schema import Recipe
from storage.fs import remove_folder
from storage.stage_figures import DedupFigures
from storage.stage_result import StageResult, parent_of, stage_shard_bytes, stage_shard_urls
from tasks.dedup.report import cluster_sizes_chart, dedup_report, s_curve_chart
from tasks.dedup.steps import dedup_steps
from tasks.dedup.task import clusters_call
from tasks.fan_out import call_seconds
from tasks.stage import StageContext, StageOutput, StageSpec, Steps, shard_entry, summed_stats


@dataclass(frozen=True)
class DedupStage:
    """Deduplicate the documents of `parent` (a stage summary, e.g. extraction's)."""
    recipe: Recipe
    parent: StageResult

    @cached_property
    def spec(self) -> StageSpec:
        return StageSpec(name="dedup", config=self.recipe.dedup.model_dump(mode="json"),
                         parents=[parent_of(self.parent)], code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        config = self.recipe.dedup
        shard_urls = stage_shard_urls(self.parent)
        steps.logger.info("dedup: %d document shards, %d buckets -> %s", len(shard_urls), config.buckets,
                          stage.stage_dir)
        timings: list[dict] = []
        charts = s_curve_chart(config)

        def map_step(name: str, function, jobs: list, sizes: list[int] | None = None, **arguments) -> list[dict]:
            """One step through `steps`, timed; the clustering one call in this process."""
            started, seconds_before = time.perf_counter(), call_seconds()
            if function is clusters_call:
                results = [steps.call(function, job, label="dedup-clusters", **arguments) for job in jobs]
                charts.update(cluster_sizes_chart(results[0]))      # drawn while the later steps run
            else:
                results = steps.map(function, jobs, f"dedup {name}", job_sizes=sizes, **arguments)
            timings.append({"step": name, "tasks": len(results),
                            "wall_seconds": round(time.perf_counter() - started, 3),
                            "task_seconds": round(call_seconds() - seconds_before, 3),   # clustering's passes too
                            "worker_peak_rss_mb": max((r["worker_peak_rss_mb"] for r in results
                                                       if "worker_peak_rss_mb" in r), default=None)})
            return results

        done = dedup_steps(shard_urls, stage.stage_dir, config, map_step, stage_shard_bytes(self.parent))
        shuffled = remove_folder(stage.path("work"))
        stats = summed_stats(done.applied)
        stats.seconds = sum(step["task_seconds"] for step in timings)   # every step's tasks, not only apply's
        figures = DedupFigures(**done.figures(), work_bytes=shuffled["bytes"], work_files=shuffled["files"])
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in done.applied], stats=stats,
                           task_results=done.applied, figures=figures,
                           report=dedup_report(config, stats, figures, done.clusters, timings, charts,
                                               stage.report_dir))
