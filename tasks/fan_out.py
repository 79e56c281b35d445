"""Fan a step out over many small calls without a Prefect task per call.

A stage's steps run in the flow process and send their calls to the stage's cluster: `completed` yields each
result as it finishes (a stage runner's `Steps.map` draws progress from that), and `fan_out` is the plain list
form for the passes of a corpus-level step (dedup's label propagation, the quality summary, the mixture), which
sends its calls to the cluster the stage runner opened with `calls_on`. Every call is timed where it runs and the
seconds add up in that `StepCalls`: the stage's task seconds, whatever step made them. Without a cluster (tests,
`tasks.dedup.steps` in one process, a notebook) the calls run one after the other in this process.

What a cluster is stays outside this layer: `Cluster` below is all a step needs of one. On Prefect + Dask the
stage runner gives `flows.dask_calls.DaskCalls`, which sends each call as a plain Dask task, retried once on an
error (the calls a lost worker held run again elsewhere).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

Result = TypeVar("Result")


class Cluster(Protocol):
    def threads(self) -> int:
        """Calls that run at once."""

    def completed(self, timed: Callable, items: list, order: Iterable[int]) -> Iterator[tuple[int, Callable]]:
        """`(index, get)` per item as its call `timed(item)` finishes, started in `order`; `get()` gives the
        call's (seconds, result) or raises its error. Stopping early cancels the calls not yet finished."""

    def submit(self, timed: Callable, job) -> Callable:
        """Start the call `timed(job)` now; the returned function waits for its (seconds, result)."""


@dataclass
class StepCalls:
    """Where a stage's calls go (a cluster, or None: in this process), the seconds they took there, and the
    longest one's (a stage cannot finish before it)."""
    cluster: Cluster | None = None
    seconds: float = 0.0
    longest: float = 0.0

    def add(self, seconds: float) -> None:
        self.seconds += seconds
        self.longest = max(self.longest, seconds)


_CALLS: ContextVar[StepCalls | None] = ContextVar("sluice_step_calls", default=None)


@contextmanager
def calls_on(cluster: Cluster | None) -> Iterator[StepCalls]:
    """Send the calls made within to `cluster` (None: in this process), adding up their seconds."""
    calls = StepCalls(cluster)
    token = _CALLS.set(calls)
    try:
        yield calls
    finally:
        _CALLS.reset(token)


def call_seconds() -> float:
    """The seconds the calls of the running stage have taken so far, on whichever worker ran them."""
    return (_CALLS.get() or StepCalls()).seconds


def fan_out(function: Callable[..., Result], items: Iterable, per_call: int = 1) -> list[Result]:
    """`[function(item) for item in items]`, on the stage's cluster when it has one, `per_call` consecutive items
    to a call (calls of a few milliseconds cost more to schedule than to run)."""
    items = list(items)
    results: list = [None] * len(items)
    for index, result in completed(function, items, per_call):
        results[index] = result
    return results


def per_thread(items: int) -> int:
    """Items per call so that each worker thread of the stage's cluster gets one call (one call in all without a
    cluster): for a pass of equal calls of a few milliseconds each, where a call's round trip through the scheduler
    costs about what its work does (dedup's clustering passes over 8 buckets: ~20 ms calls)."""
    calls = _CALLS.get() or StepCalls()
    threads = calls.cluster.threads() if calls.cluster is not None else 1
    return max(1, -(-items // max(1, threads)))


def completed(function: Callable[..., Result], items: Iterable, per_call: int = 1,
              sizes: Sequence[float] | None = None) -> Iterator[tuple[int, Result]]:
    """`(index, function(item))` for every item, in the order the calls finish, `per_call` consecutive items to a
    call. A failed call's error names its item (its items, when a call has several).

    `sizes`, one per item (input bytes, say): the calls start largest first, so the last calls are the short ones
    and the workers finish close together, not one idle while another runs a large shard it took up last."""
    items = list(items)
    if per_call > 1:
        groups = [items[start:start + per_call] for start in range(0, len(items), per_call)]
        group_sizes = [sum(sizes[start:start + per_call]) for start in range(0, len(items), per_call)] \
            if sizes is not None else None
        for group, results in completed(_Each(function), groups, sizes=group_sizes):
            for offset, result in enumerate(results):
                yield group * per_call + offset, result
        return
    order = sorted(range(len(items)), key=lambda index: -sizes[index]) if sizes is not None else range(len(items))
    calls = _CALLS.get() or StepCalls()
    timed = Timed(function)
    if calls.cluster is None:
        outcomes = ((index, _naming(items[index], lambda: timed(items[index]))) for index in order)
    else:
        outcomes = ((index, _naming(items[index], get)) for index, get in calls.cluster.completed(timed, items, order))
    for index, (seconds, result) in outcomes:
        calls.add(seconds)
        yield index, result


def in_background(job: Callable[[], Result]) -> Callable[[], Result]:
    """Start `job` as one call on the stage's cluster now, while the flow process goes on with the stage's other
    steps; the returned function waits for its result (its seconds count with the stage's calls). For work the
    flow process would otherwise do alone, such as drawing a report's chart. Without a cluster the job runs when its
    result is asked for."""
    calls = _CALLS.get() or StepCalls()
    timed = Timed(call)
    pending = calls.cluster.submit(timed, job) if calls.cluster is not None else None

    def result() -> Result:
        seconds, value = _naming(job, pending if pending is not None else lambda: timed(job))
        calls.add(seconds)
        return value
    return result


def call(job: Callable[[], Result]) -> Result:
    """A job that is its own call: for a step whose calls are different functions (`functools.partial`s)."""
    return job()


@dataclass(frozen=True)
class Timed:
    """A call that also returns its own seconds, measured where it runs."""
    function: Callable

    def __call__(self, item) -> tuple[float, object]:
        started = time.perf_counter()
        result = self.function(item)
        return time.perf_counter() - started, result


@dataclass(frozen=True)
class _Each:
    function: Callable

    def __call__(self, items: list) -> list:
        return [self.function(item) for item in items]


def _naming(item, call: Callable[[], Result]) -> Result:
    try:
        return call()
    except Exception as error:
        error.add_note(f"(in the call on {_named(item)})")
        raise


def _named(item, width: int = 160) -> str:
    """An item as an error note names it: a job that is a function by the function's name, anything else by its
    repr, cut to `width` characters."""
    if isinstance(item, partial):
        return f"{getattr(item.func, '__name__', type(item.func).__name__)}(...)"
    text = repr(item)
    return text if len(text) <= width else text[:width - 3] + "..."
