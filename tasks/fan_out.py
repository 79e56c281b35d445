"""Fan a step out over many small calls without a Prefect task per call.

Inside a Prefect task that runs on a Dask worker, the calls go to the same cluster as plain Dask tasks: the
calling task secedes from the worker's thread pool while it waits (so one worker can run them), and a worker
lost meanwhile costs only the calls it held, which the scheduler runs again elsewhere. Anywhere else (tests,
`tasks.dedup.in_process`, a notebook) they run one after the other in this process.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
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
