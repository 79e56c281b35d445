"""What a stage is, once for every stage: a `Stage` object names what its output depends on (`spec`) and does its
work (`produce`) through a `Steps` runner, which maps a function over shards or buckets, or makes one call.

The stages are defined beside their work (`tasks/extract/stage.py`, `tasks/dedup/stage.py`, ...). A runner
executes one: `tasks.stage_run.run_in_process` in this process (tests, a laptop, `python -c`), or
`flows.stage_runner.run_stage` with each step a Prefect task run of Dask calls. Which one runs a stage changes
where its calls go and where its progress shows, never its bytes.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Protocol, Sequence

from storage.code_version import code_version
from storage.manifest import ShardEntry
from storage.stage_figures import StageFigures
from storage.stage_store import stage_fingerprint
from tasks.fan_out import Cluster
from tasks.grouping import byte_groups
from tasks.shard_result import ShardResult
from tasks.stage_report import StageReport
from tasks.stats import StageStats


@dataclass(frozen=True)
class StageSpec:
    """What a stage's output depends on: its name, its config, its inputs and its code."""
    name: str
    config: dict                 # JSON-able; part of the fingerprint and the manifest
    parents: list[dict]          # input-file identities, or `parent_of(...)` of upstream stage results
    code_root: str               # the module that defines the stage (`__name__`); its imports are followed

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
        return StageReport.folder_of(self.stage_dir, create=True)


class Steps(Protocol):
    """How a stage's steps run: in this process (`tasks.stage_run.InProcessSteps`) or as Prefect task runs of Dask
    calls (`flows.stage_runner.PrefectSteps`)."""
    logger: logging.Logger | logging.LoggerAdapter
    cluster: Cluster | None       # where the calls go (None: in this process); `tasks.fan_out` sends them there

    def map(self, function: Callable[..., dict], jobs: Sequence, label: str, job_sizes: Sequence[int] | None = None,
            on_result: Callable[[dict], None] | None = None, **arguments) -> list[dict]:
        """One step: `function(job, **arguments)` for every job, results in job order. With `job_sizes` (input
        bytes per job) the largest start first; `on_result` sees each result in this process as it comes. A call
        may return `warnings`, lines the step logs."""

    def call(self, function: Callable, *args, label: str, on_cluster: bool = False, **kwargs):
        """One call that is a step of its own (a clustering, a mixture plan): in this process (its passes fan out to
        the cluster themselves) or, `on_cluster`, as one call on the cluster, counted with the stage's calls (a
        model fit); on Prefect, retried once on an error."""


class Stage(Protocol):
    """A stage: what its output depends on, and the work that makes it in `StageContext.stage_dir`."""

    @property
    def spec(self) -> StageSpec: ...

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput: ...


CALLS_PER_SLOT = 4          # calls per worker thread at least, while there are shards enough


def map_groups(steps: Steps, function: Callable[..., list[dict]], jobs: Sequence, sizes: Sequence[int], label: str,
               **arguments) -> list[dict]:
    """`steps.map` of a function over a list of jobs (shards grouped by `byte_groups`); one result per job, in job
    order. Each job still records its own result, so a retried group redoes only its unfinished shards."""
    slots = steps.cluster.threads() if steps.cluster is not None else 1
    groups = byte_groups(range(len(jobs)), sizes, CALLS_PER_SLOT * slots)
    return [result for group in steps.map(function, [[jobs[index] for index in group] for group in groups], label,
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
