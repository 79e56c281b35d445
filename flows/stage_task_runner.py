"""The task runner the stage flows are declared with: the Dask cluster of the `flows.dask_cluster.dask_cluster`
block the stage runs in, found when its flow run starts.

Declared once on the flow, a stage is called as it is: `with_options(task_runner=...)` per call rebuilt the flow
and its parameter schema from the recipe's pydantic model, ~0.33 s per stage on 2 cores (a mixture search calls
about sixty). The Dask client is made when the stage first sends a call (prefect_dask's is lazy), and the block's
LocalCluster started then, so a stage found in the store costs no connection and a run found whole no cluster."""
from __future__ import annotations

from prefect_dask import DaskTaskRunner

from flows.dask_cluster import RunCluster, current_cluster


class PipelineCluster(DaskTaskRunner):
    def duplicate(self) -> DaskTaskRunner:
        """What the flow run uses: a runner on the enclosing block's cluster (Prefect duplicates the declared
        runner for every run, and again on a Dask worker for the context of a task sent there, where it finds
        that worker's cluster)."""
        cluster = current_cluster()
        if cluster is None and not _on_a_dask_worker():
            raise RuntimeError("a stage flow runs inside flows.dask_cluster.dask_cluster(...), which gives it its "
                               "Dask cluster")
        return _OnTheBlocksCluster(cluster)


class _OnTheBlocksCluster(DaskTaskRunner):
    """A runner whose scheduler address is asked of the block's cluster when its client is first made."""

    def __init__(self, cluster: RunCluster | None):
        super().__init__()
        self._block_cluster = cluster       # None on a Dask worker: prefect_dask finds the worker's own client

    @property
    def client(self):
        if self._client is None and self._block_cluster is not None:
            self.address = self._block_cluster.address
        return DaskTaskRunner.client.fget(self)

    def duplicate(self) -> DaskTaskRunner:
        return _OnTheBlocksCluster(self._block_cluster)


def _on_a_dask_worker() -> bool:
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return False
    return True
