"""Embedded-service defaults, applied before Prefect or MLflow are imported. Explicit settings always win."""
from __future__ import annotations

import os

from storage.locations import state_dir
from tracking.store import tracking_uri


def apply_quiet_defaults() -> None:
    """No telemetry from the embedded services (safe to call from library code)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")   # per-file bars when a model loads


def apply_cli_defaults(quiet: bool = False) -> None:
    """For the `sluice` command: keep Prefect's database under the project's state directory, and track in MLflow
    where a running `sluice server` does, else in the state directory's store (tracking.store); `quiet` keeps the
    console to progress, warnings and the summary (flows.console)."""
    apply_quiet_defaults()
    if quiet:
        from flows.console import quiet_console_environment

        quiet_console_environment()
    state = state_dir()
    os.environ.setdefault("PREFECT_HOME", str(state / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    # every process the command starts (Dask workers, training ranks) logs where the command does
    os.environ.setdefault("MLFLOW_TRACKING_URI", tracking_uri(None))
