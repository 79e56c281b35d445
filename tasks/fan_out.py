"""Fan a step out over many small calls without a Prefect task per call.

From the flow process, `completed` sends the calls to the flow's Dask cluster through its client and yields each
result as it finishes (`flows.stage_runner.map_tasks` draws progress from that). Inside a Prefect task that runs
on a Dask worker, `fan_out`'s calls go to the same cluster as plain Dask tasks: the
calling task secedes from the worker's thread pool while it waits (so one worker can run them), and a worker
lost meanwhile costs only the calls it held, which the scheduler runs again elsewhere. Anywhere else (tests,
`tasks.dedup.in_process`, a notebook) they run one after the other in this process.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

Result = TypeVar("Result")


def fan_out(function: Callable[..., Result], items: Iterable) -> list[Result]:
    """`[function(item) for item in items]`, on the Dask cluster when called from one of its workers."""
    items = list(items)
    if "distributed" not in sys.modules:    # not in a Dask worker (and importing it would cost ~1 s)
        return [function(item) for item in items]
    from distributed import get_worker, worker_client

    try:
        get_worker()
    except ValueError:
        return [function(item) for item in items]
    with worker_client() as client:
        return client.gather(client.map(function, items, pure=False))


def completed(function: Callable[..., Result], items: Iterable, client=None) -> Iterator[tuple[int, Result]]:
    """`(index, function(item))` for every item, in the order the calls finish: as plain Dask tasks through
    `client` (each retried once on an error; the calls a lost worker held run again elsewhere), or one after the
    other in this process when `client` is None. A failed call's error names its item."""
    items = list(items)
    if client is None:
        yield from ((index, _naming(item, lambda: function(item))) for index, item in enumerate(items))
        return
    from distributed import as_completed

    futures = client.map(function, items, pure=False, retries=1)
    index_of = {future.key: index for index, future in enumerate(futures)}
    for future in as_completed(futures, loop=client.loop):
        index = index_of[future.key]
        yield index, _naming(items[index], future.result)


def _naming(item, call: Callable[[], Result]) -> Result:
    try:
        return call()
    except Exception as error:
        error.add_note(f"(in the call on {item!r})")
        raise
