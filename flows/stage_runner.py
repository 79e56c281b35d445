"""The stage contract, once, for every stage: fingerprint, store lookup and skip, the stage's work, manifest
published last, report to MLflow and Prefect.

A stage declares what its output depends on (a `StageSpec`) and a `produce` function that does the work in
`stage_dir` (usually by mapping a function over shards or buckets with `map_tasks`) and returns a
`StageOutput`. Everything else, including the cache hit that skips the stage, happens here.

Outside a Prefect flow run the same stage runs in this process, without Prefect: a stage flow's `.fn`
(`extract_stage_flow.fn(recipe)`) calls its steps one after another here, logs to the `sluice.stages` logger and
publishes the same manifest, with the same fingerprint and the same bytes, but reports to neither MLflow nor
Prefect (tests/test_flow_e2e.py compares the two).
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Callable, Sequence

from prefect import Task, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext

from configs.schema import Recipe
from flows.dask_calls import DaskCalls
from flows.reporting import StageReport, publish_stage_report
from flows.step_progress import StepProgress
from flows.ui_writes import ui_writes_sent
from storage.code_version import code_version
from storage.manifest import Manifest, ShardEntry
from storage.stage_figures import FIGURES_KEY, StageFigures
from storage.stage_result import StageResult, stage_result
from storage.stage_store import StageStore, stage_fingerprint
from tasks.fan_out import calls_on, completed
from tasks.grouping import byte_groups
from tasks.shard_result import ShardResult
from tasks.stats import StageStats, orchestration_share, overhead_share


@dataclass(frozen=True)
class StageSpec:
    """What a stage's output depends on: its name, its config, its inputs and its code."""
    name: str
    config: dict                 # JSON-able; part of the fingerprint and the manifest
    parents: list[dict]          # input-file identities, or `parent_of(...)` of upstream stage results
    code_root: str               # the flow module that defines the stage (`__name__`); its imports are followed

    @cached_property
    def code_version(self) -> str:
        """Derived from what the stage's module imports, transitively (see storage.code_version)."""
        return code_version(self.code_root)

    @property
    def fingerprint(self) -> str:
        # An upstream stage counts by its content (digest), not where its store is: the same data in another
        # store gives the same fingerprint.
        identities = [{key: value for key, value in parent.items() if key != "location"} for parent in self.parents]
        return stage_fingerprint(self.name, self.config, identities, self.code_version)


@dataclass
class StageOutput:
    """What a stage's work produced: the output shards, the summed stats and what people read."""
    shards: list[ShardEntry]
    stats: StageStats
    task_results: list[dict] = field(default_factory=list)   # one row each in the per-shard table artifact
    report: StageReport = field(default_factory=StageReport)
    figures: StageFigures | None = None            # the stage's own figures (storage.stage_figures)


@dataclass(frozen=True)
class StageContext:
    spec: StageSpec
    stage_dir: str

    def path(self, *parts: str) -> str:
        return "/".join((self.stage_dir, *parts))

    @property
    def report_dir(self) -> str:
        """Where the stage writes report files (charts); a local directory, created on demand."""
        os.makedirs(_report_dir(self.stage_dir), exist_ok=True)
        return _report_dir(self.stage_dir)


def _report_dir(stage_dir: str) -> str:
    return f"{stage_dir}/report"


def run_stage(recipe: Recipe, spec: StageSpec, produce: Callable[[StageContext], StageOutput]) -> StageResult:
    """Run a stage unless the store already holds its output; returns the stage summary (see reporting)."""
    logger = stage_logger()
    store = StageStore(recipe.store)
    fingerprint = spec.fingerprint
    cached = store.find(spec.name, fingerprint)
    if cached is not None:
        logger.info("%s: already done in %s (fingerprint %s), skipping", spec.name,
                    store.stage_dir(spec.name, fingerprint), fingerprint)
        return _reported(recipe, cached, store.manifest_url(spec.name, fingerprint), [], cached=True,
                         report=lambda: StageReport.load(_report_dir(store.stage_dir(spec.name, fingerprint))))

    context = StageContext(spec, store.stage_dir(spec.name, fingerprint))
    started = time.perf_counter()
    try:
        with calls_on(_dask_calls()) as calls:
            output = produce(context)
    except Exception as error:
        error.add_note(f"(in stage {spec.name})")
        raise
    finally:
        ui_writes_sent()     # the steps' progress bars, sent in the background; none outlives the stage
    wall = round(time.perf_counter() - started, 3)
    call_seconds, longest = round(calls.seconds, 3), round(calls.longest, 3)
    slots = task_slots()
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
    if os.path.isdir(context.stage_dir):  # reports are kept for local stores (MLflow logs files from disk)
        output.report.save(_report_dir(context.stage_dir))
    return _reported(recipe, manifest, store.publish(manifest), output.task_results, cached=False,
                     report=lambda: output.report)


def _reported(recipe: Recipe, manifest: Manifest, manifest_url: str, task_results: list[dict], cached: bool,
              report: Callable[[], StageReport]) -> StageResult:
    """The stage's result, reported to MLflow and Prefect inside a flow run; outside one, the result alone."""
    if not in_a_flow():
        return stage_result(manifest, manifest_url, cached=cached)
    return publish_stage_report(recipe, manifest, manifest_url, task_results, cached=cached, report=report())


def in_a_flow() -> bool:
    """Whether this runs inside a Prefect flow run (else the stage runs in this process, without Prefect)."""
    return FlowRunContext.get() is not None


def stage_logger() -> logging.Logger | logging.LoggerAdapter:
    """The flow run's logger (its lines reach the Prefect UI), or the `sluice.stages` logger outside a flow."""
    return get_run_logger() if in_a_flow() else logging.getLogger("sluice.stages")


def one_call(prefect_task: Task, *args, on_cluster: bool = False, **kwargs):
    """A stage's single call: a Prefect task run (retried as the task says), in this process or, `on_cluster`, on
    the flow's task runner; outside a flow, the plain function in this process."""
    if not in_a_flow():
        return prefect_task.fn(*args, **kwargs)
    return prefect_task.submit(*args, **kwargs).result() if on_cluster else prefect_task(*args, **kwargs)


def task_slots() -> int | None:
    """Threads of the Dask cluster the stage's tasks ran on (None when its task runner is not Dask's)."""
    cluster = _dask_calls()
    return (cluster.threads() or None) if cluster is not None else None


def map_tasks(function: Callable[..., dict], jobs: Sequence, label: str, job_sizes: Sequence[int] | None = None,
              on_result: Callable[[dict], None] | None = None, **arguments) -> list[dict]:
    """One step of a stage: `function(job, **arguments)` for every job, results in job order.

    The step is one Prefect task run (named `label`, with a progress artifact and progress lines in its logs and
    on the console); each call is a plain Dask task on the flow's cluster (`tasks.fan_out.completed`), so a
    thousand shards cost Prefect one task run, not a thousand. Calls are timed where they run (the stage's
    `call_seconds`, from which its orchestration share is taken). Calls are retried once by Dask, a lost worker
    costs only the calls it held, and every shard call records its own result (`tasks.resumable`), so a rerun
    redoes only unfinished shards. A call may return `warnings` (lines the step logs where the run's logs go).
    Calls return small dicts (paths and counts), never documents. With `job_sizes` (input bytes per job) the
    largest jobs start first, so the workers finish together. `on_result` is called in this process with each
    result as it comes, while the other calls still run.
    """
    step = _step.with_options(task_run_name=label) if in_a_flow() else _step.fn
    return step(function, list(jobs), label, arguments, list(job_sizes) if job_sizes is not None else None,
                on_result)


@task(name="stage-step", cache_policy=NO_CACHE, persist_result=False)
def _step(function: Callable[..., dict], jobs: list, label: str, arguments: dict,
          job_sizes: list[int] | None, on_result: Callable[[dict], None] | None) -> list[dict]:
    logger = stage_logger()
    progress = StepProgress(label, len(jobs), logger, ui=in_a_flow())
    results: list[dict | None] = [None] * len(jobs)
    for done, (index, result) in enumerate(completed(partial(function, **arguments), jobs, sizes=job_sizes),
                                           start=1):
        for line in result.pop("warnings", []) if isinstance(result, dict) else ():   # a group's is a list
            logger.warning("%s", line)
        results[index] = result
        if on_result is not None:
            on_result(result)
        progress.update(done)
    return results


def _dask_calls() -> DaskCalls | None:
    """The Dask cluster of the flow's task runner, or None when the flow does not run on Dask (or outside a flow:
    the calls run in this process)."""
    from prefect_dask import DaskTaskRunner

    context = FlowRunContext.get()
    runner = context.task_runner if context is not None else None
    return DaskCalls(runner.client) if isinstance(runner, DaskTaskRunner) else None


CALLS_PER_SLOT = 4          # calls per worker thread at least, while there are shards enough


def map_groups(function: Callable[..., list[dict]], jobs: Sequence, sizes: Sequence[int], label: str,
               **arguments) -> list[dict]:
    """`map_tasks` for a function over a list of jobs (shards grouped by `byte_groups`); one result per job, in job
    order. Each job still records its own result, so a retried group redoes only its unfinished shards."""
    groups = byte_groups(range(len(jobs)), sizes, CALLS_PER_SLOT * (task_slots() or 1))
    return [result for group in map_tasks(function, [[jobs[index] for index in group] for group in groups], label,
                                          job_sizes=[sum(sizes[index] for index in group) for group in groups],
                                          **arguments)
            for result in group]


def shard_entry(stage_dir: str, result: dict) -> ShardEntry:
    """A manifest entry from a shard task's result (see tasks.shard_result)."""
    return ShardResult.from_dict(result).manifest_entry(stage_dir)


def summed_stats(results: list[dict]) -> StageStats:
    total = StageStats()
    for result in results:
        total.merge(StageStats.from_dict(result))
    return total
