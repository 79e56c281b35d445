"""The task runner the stage flows are declared with: the Dask cluster of the `flows.dask_cluster.dask_cluster`
block the stage runs in, found when its flow run starts.

Declared once on the flow, a stage is called as it is: `with_options(task_runner=...)` per call rebuilt the flow
and its parameter schema from the recipe's pydantic model, ~0.33 s per stage on 2 cores (a mixture search calls
about sixty). The Dask client itself is made when the stage first sends a call (prefect_dask's is lazy), so a stage
found in the store costs no connection."""
from __future__ import annotations

from prefect_dask import DaskTaskRunner

from flows.dask_cluster import current_scheduler


class PipelineCluster(DaskTaskRunner):
    def duplicate(self) -> DaskTaskRunner:
        """What the flow run uses: a runner on the enclosing block's scheduler (Prefect duplicates the declared
        runner for every run, and again on a Dask worker for the context of a task sent there, where it finds
        that worker's cluster)."""
        address = current_scheduler()
        if address is None and not _on_a_dask_worker():
            raise RuntimeError("a stage flow runs inside flows.dask_cluster.dask_cluster(...), which gives it its "
                               "Dask cluster")
        return DaskTaskRunner(address=address)


def _on_a_dask_worker() -> bool:
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return False
    return True
