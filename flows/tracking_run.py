"""A pipeline run's MLflow run, opened on a thread while the first stage starts.

Importing MLflow costs ~1.5 s (`import mlflow` loads its GenAI and pandas-backed dataset modules), and opening the
run with its parameters and recipe a few round trips more: most of what stood between `sluice run` and its first
task with `sluice server` up. Nothing needs the run before the first stage ends. So the run opens on a thread,
and the first stage report to log (`flows.reporting.publish_stage_report`) waits for it and makes it the active
run of the flow's thread: MLflow keeps the active run per thread.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_PENDING: ContextVar["BackgroundRun | None"] = ContextVar("sluice_pending_mlflow_run", default=None)


class BackgroundRun:
    """`open_run()` (returns the run id) on a thread, started now."""

    def __init__(self, open_run: Callable[[], str]):
        self._run_id: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._open, args=(open_run,), name="sluice-mlflow-run", daemon=True)
        self._thread.start()

    def _open(self, open_run: Callable[[], str]) -> None:
        try:
            self._run_id = open_run()
        except BaseException as error:       # raised where the run is first needed
            self._error = error

    def opened_id(self) -> str | None:
        """The run id, or None when opening it failed."""
        self._thread.join()
        return self._run_id

    def run_id(self) -> str:
        if (run_id := self.opened_id()) is None:
            raise RuntimeError("could not open the run's MLflow run") from self._error
        return run_id

    def activate(self) -> None:
        """Make the run this thread's active MLflow run, unless it already is."""
        import mlflow

        run_id = self.run_id()
        active = mlflow.active_run()
        if active is None or active.info.run_id != run_id:
            mlflow.start_run(run_id=run_id)


@contextmanager
def pending(run: BackgroundRun) -> Iterator[BackgroundRun]:
    """Within, the first code that logs to MLflow calls `activate_pending_run()` first."""
    token = _PENDING.set(run)
    try:
        yield run
    finally:
        _PENDING.reset(token)


def activate_pending_run() -> None:
    run = _PENDING.get()
    if run is not None:
        run.activate()
