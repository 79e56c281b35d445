"""Running a stage (tasks.stage), whatever runs its steps: fingerprint, store lookup and skip, the stage's work,
manifest published last.

`run_in_process(stage, store)` runs one in this process, with no Prefect and no Dask:

    extract = run_in_process(ExtractStage(recipe), recipe.store)
    dedup = run_in_process(DedupStage(recipe, extract), recipe.store)

It publishes the same manifest, with the same fingerprint and the same bytes, as the stage run as a Prefect
subflow on Dask (`flows.stage_runner`, which also reports it to MLflow and Prefect; tests/test_flow_e2e.py
compares the two)."""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable, Sequence

from storage.manifest import Manifest
from storage.stage_figures import FIGURES_KEY
from storage.stage_result import StageResult, stage_result
from storage.stage_store import StageStore
from tasks.fan_out import Cluster, calls_on, completed
from tasks.stage import Stage, StageContext, Steps
from tasks.stage_report import StageReport
from tasks.stats import orchestration_share, overhead_share


@dataclass
class StageRun:
    """A stage's published (or found) manifest, and what its report shows."""
    manifest: Manifest
    manifest_url: str
    cached: bool
    task_results: list[dict]
    report: StageReport


def stored_run(stage: Stage, store_url: str, logger: logging.Logger | logging.LoggerAdapter) -> StageRun | None:
    """The stage's output as the store holds it (said on `logger`), or None when it has none yet."""
    spec = stage.spec
    store = StageStore(store_url)
    stage_dir = store.stage_dir(spec.name, spec.fingerprint)
    cached = store.find(spec.name, spec.fingerprint)
    if cached is None:
        return None
    logger.info("%s: already done in %s (fingerprint %s), skipping", spec.name, stage_dir, spec.fingerprint)
    return StageRun(cached, store.manifest_url(spec.name, spec.fingerprint), True, [],
                    StageReport.load(StageReport.folder_of(stage_dir)))


def run_stage(stage: Stage, store_url: str, steps: Steps) -> StageRun:
    """Run `stage` with `steps` unless the store already holds its output."""
    if (found := stored_run(stage, store_url, steps.logger)) is not None:
        return found
    spec = stage.spec
    store = StageStore(store_url)
    fingerprint = spec.fingerprint
    stage_dir = store.stage_dir(spec.name, fingerprint)
    context = StageContext(spec, stage_dir)
    cluster = steps.cluster     # connected first (a run's LocalCluster starts here): start-up, not the stage's time
    started = time.perf_counter()
    try:
        with calls_on(cluster) as calls:
            output = stage.produce(context, steps)
    except Exception as error:
        error.add_note(f"(in stage {spec.name})")
        raise
    wall = round(time.perf_counter() - started, 3)
    call_seconds, longest = round(calls.seconds, 3), round(calls.longest, 3)
    slots = cluster.threads() if cluster is not None else None
    # the shares are computed from the rounded figures the stats hold, so a reader can recompute them from them
    stats = output.stats.to_dict() | {"call_seconds": call_seconds, "longest_call_seconds": longest} | (
        {"task_slots": slots, "orchestration_share": orchestration_share(wall, call_seconds, slots),
         "overhead_share": overhead_share(wall, call_seconds, slots, longest)} if slots else {})
    manifest = Manifest(
        stage=spec.name, fingerprint=fingerprint, config=spec.config, code_version=spec.code_version,
        parents=spec.parents, shards=output.shards,
        stats=stats | ({FIGURES_KEY: output.figures.to_dict()} if output.figures else {}) | {"wall_seconds": wall,
                       "docs_per_second_wall": round(output.stats.candidates / wall, 2) if wall else 0.0},
    )
    if os.path.isdir(stage_dir):  # reports are kept for local stores (MLflow logs files from disk)
        output.report.save(StageReport.folder_of(stage_dir))
    return StageRun(manifest, store.publish(manifest), False, output.task_results, output.report)


def run_in_process(stage: Stage, store_url: str) -> StageResult:
    """Run `stage` in this process (no Prefect, no Dask); its summary, as a stage flow returns it."""
    run = run_stage(stage, store_url, InProcessSteps())
    return stage_result(run.manifest, run.manifest_url, run.cached)


class InProcessSteps:
    """Steps run one call after another in this process, progress logged to the `sluice.stages` logger."""
    cluster: Cluster | None = None

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter | None = None):
        self.logger = logger or logging.getLogger("sluice.stages")

    def map(self, function: Callable[..., dict], jobs: Sequence, label: str, job_sizes: Sequence[int] | None = None,
            on_result: Callable[[dict], None] | None = None, **arguments) -> list[dict]:
        total, reported_tenth = len(jobs), 0

        def progress(done: int) -> None:
            nonlocal reported_tenth
            if 10 * done // total > reported_tenth or done == total:
                reported_tenth = 10 * done // total
                self.logger.info("%s: %d/%d done", label, done, total)

        return step_results(function, list(jobs), arguments, job_sizes, on_result, self.logger, progress)

    def call(self, function: Callable, *args, label: str, on_cluster: bool = False, **kwargs):
        return function(*args, **kwargs)


def step_results(function: Callable[..., dict], jobs: list, arguments: dict, job_sizes: Sequence[int] | None,
                 on_result: Callable[[dict], None] | None, logger: logging.Logger | logging.LoggerAdapter,
                 progress: Callable[[int], None]) -> list[dict]:
    """A step's loop, whichever runner: `function(job, **arguments)` for every job (`tasks.fan_out.completed`:
    on the stage's cluster, if any), the `warnings` a call returns logged, `on_result` and `progress(done)` called
    as results come; the results in job order."""
    results: list[dict | None] = [None] * len(jobs)
    for done, (index, result) in enumerate(completed(partial(function, **arguments), jobs, sizes=job_sizes),
                                           start=1):
        for line in result.pop("warnings", []) if isinstance(result, dict) else ():   # a group's is a list
            logger.warning("%s", line)
        results[index] = result
        if on_result is not None:
            on_result(result)
        progress(done)
    return results
