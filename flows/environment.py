"""Embedded-service defaults, applied before Prefect or MLflow are imported. Explicit settings always win."""
from __future__ import annotations

import os

from storage.locations import state_dir


def apply_quiet_defaults() -> None:
    """No telemetry from the embedded services (safe to call from library code)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("DO_NOT_TRACK", "1")


def apply_cli_defaults() -> None:
    """For the `sluice` command: keep Prefect's database and MLflow's under the project's state directory."""
    apply_quiet_defaults()
    state = state_dir()
    os.environ.setdefault("PREFECT_HOME", str(state / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{state / 'mlflow.db'}")
