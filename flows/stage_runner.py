"""A stage (tasks.stage) run as a Prefect subflow named after it: each step one Prefect task run of Dask calls on
the enclosing `flows.dask_cluster` block's cluster, with progress in the UI and the logs, and the finished stage
reported to MLflow and Prefect.

    documents = stage_flow(recipe, DedupStage(recipe, stage_flow(recipe, ExtractStage(recipe))))

A stage the store already holds opens no subflow: the calling flow run says so and reports it (a cached rerun
costs a store lookup per stage, not a flow run's API round trips: ~0.3 s a stage on 2 cores). The same stage runs
in one process, without Prefect, through `tasks.stage_run.run_in_process`.
"""
from __future__ import annotations

from functools import cache, cached_property, partial
from typing import Any, Callable, Sequence

from prefect import Flow, flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext

from configs.schema import Recipe
from flows.dask_calls import DaskCalls
from flows.reporting import publish_stage_report
from flows.stage_task_runner import PipelineCluster
from flows.step_progress import StepProgress
from flows.ui_writes import ui_writes_sent
from storage.stage_result import StageResult
from tasks.fan_out import in_background
from tasks.stage import Stage
from tasks.stage_run import StageRun, step_results, stored_run
from tasks.stage_run import run_stage as run_stage_with


def stage_flow(recipe: Recipe, stage: Stage) -> StageResult:
    """`stage`'s result: found in the store (reported in the calling flow run), else made by its subflow."""
    found = stored_run(stage, recipe.store, get_run_logger())
    if found is not None:
        return _published(recipe, found)
    return _flow_named(stage.spec.name)(recipe, stage)


@cache
def _flow_named(name: str) -> Flow:
    """One flow per stage name, declared once a process."""
    return flow(name=name, log_prints=True, task_runner=PipelineCluster(), validate_parameters=False)(_stage_run)


def _stage_run(recipe: Any, stage: Any) -> StageResult:
    """Make the stage's output in this flow run (unless the store holds it by now) and report it. (A Recipe and a
    Stage, typed Any for Prefect: a flow's declaration builds a parameter schema from its hints, which a Protocol
    cannot have and the Recipe model costs ~0.3 s of, for a subflow no deployment or form ever reads.)"""
    try:
        run = run_stage_with(stage, recipe.store, PrefectSteps())
    finally:
        ui_writes_sent()     # the steps' progress bars, sent in the background; none outlives the stage
    return _published(recipe, run)


def _published(recipe: Recipe, run: StageRun) -> StageResult:
    return publish_stage_report(recipe, run.manifest, run.manifest_url, run.task_results, cached=run.cached,
                                report=run.report)


class PrefectSteps:
    """A stage's steps as Prefect task runs; their calls go to the flow's Dask cluster when it has one."""

    def __init__(self) -> None:
        self.logger = get_run_logger()

    @cached_property
    def cluster(self) -> DaskCalls | None:
        """Connected when the stage first needs it: a stage found in the store connects to nothing."""
        return _dask_calls()

    def map(self, function: Callable[..., dict], jobs: Sequence, label: str, job_sizes: Sequence[int] | None = None,
            on_result: Callable[[dict], None] | None = None, **arguments) -> list[dict]:
        """One Prefect task run (named `label`, with a progress artifact and progress lines in its logs and on the
        console); each call a plain Dask task (`tasks.fan_out.completed`), so a thousand shards cost Prefect one
        task run, not a thousand. Calls are retried once by Dask and a lost worker costs only the calls it held;
        every shard call records its own result (`tasks.resumable`), so a rerun redoes only unfinished shards."""
        return _step.with_options(task_run_name=label)(function, list(jobs), label, arguments,
                                                         list(job_sizes) if job_sizes is not None else None,
                                                         on_result)

    def call(self, function: Callable, *args, label: str, on_cluster: bool = False, **kwargs):
        """A Prefect task run named `label`, retried once, its work done in this process or, `on_cluster`, as one
        call on the stage's cluster (timed there, with the stage's other calls: it is the stage's work, not its
        orchestration). No Prefect cache: a rerun resumes from the calls' own records, and some arguments
        (callbacks) cannot be hashed."""
        as_task = task(name=label, retries=1, retry_delay_seconds=2, cache_policy=NO_CACHE)
        if on_cluster:
            return as_task(_cluster_call)(partial(function, *args, **kwargs))
        return as_task(function)(*args, **kwargs)


@task(name="stage-step", cache_policy=NO_CACHE, persist_result=False)
def _step(function: Callable[..., dict], jobs: list, label: str, arguments: dict,
          job_sizes: list[int] | None, on_result: Callable[[dict], None] | None) -> list[dict]:
    logger = get_run_logger()
    return step_results(function, jobs, arguments, job_sizes, on_result, logger,
                        StepProgress(label, len(jobs), logger).update)


def _cluster_call(work: Callable):
    return in_background(work)()


def _dask_calls() -> DaskCalls | None:
    """The Dask cluster of the flow's task runner, or None when the flow does not run on Dask (the calls run in
    this process)."""
    from prefect_dask import DaskTaskRunner

    runner = FlowRunContext.get().task_runner
    return DaskCalls(runner.client) if isinstance(runner, DaskTaskRunner) else None
