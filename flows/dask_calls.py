"""Where a stage's calls go when its flow runs on Dask: `tasks.fan_out` sends them to this, the stage runner
opens it on the task runner's client (`calls_on(DaskCalls(client))`)."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator


class DaskCalls:
    def __init__(self, client):
        self.client = client

    def threads(self) -> int:
        """The worker threads of the cluster."""
        return sum(self.client.nthreads().values())

    def completed(self, timed: Callable, items: list, order: Iterable[int]) -> Iterator[tuple[int, Callable]]:
        """(index, a function giving that call's result) as the calls finish, submitted in `order` (Dask starts
        them in that order); a result is released on the cluster once it is fetched, so a caller that consumes
        results as they come holds one at a time (the summary's per-shard sketches add up that way)."""
        from distributed import as_completed

        order = list(order)
        futures = self.client.map(timed, [items[index] for index in order], pure=False, retries=1)
        index_of = {future.key: index for index, future in zip(order, futures)}
        finishing = as_completed(futures, loop=self.client.loop)
        del futures
        try:
            for future in finishing:
                yield index_of[future.key], lambda future=future: _released(future)
        except BaseException:         # the step failed (or its caller stopped): its other calls need not run
            with contextlib.suppress(Exception):      # a closing client: the failure is what the caller must see
                self.client.cancel(list(finishing.futures))
            raise

    def submit(self, timed: Callable, job) -> Callable:
        """Start one call now; the returned function waits for its result."""
        return self.client.submit(timed, job, pure=False, retries=1).result


def _released(future):
    result = future.result()
    future.release()
    return result
