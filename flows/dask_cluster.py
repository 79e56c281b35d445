"""The Dask cluster a pipeline run uses: an existing scheduler, or a LocalCluster sized to the machine."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from configs.schema import DaskConfig


@contextmanager
def dask_cluster(config: DaskConfig) -> Iterator[str]:
    """Yield a scheduler address. A LocalCluster started here is closed on exit, also on error or cancel."""
    if config.address:
        yield config.address
        return
    from distributed import LocalCluster

    workers = config.n_workers or os.cpu_count() or 1
    with LocalCluster(n_workers=workers, threads_per_worker=config.threads_per_worker, processes=True,
                      dashboard_address=":0", host="127.0.0.1") as cluster:
        yield cluster.scheduler_address
