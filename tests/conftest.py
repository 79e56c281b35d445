"""Shared fixtures: the real third-party data directory and an isolated state directory per test session."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    from storage.locations import shared_data_dir

    return shared_data_dir()


@pytest.fixture(scope="session")
def lid_model(data_dir) -> str:
    return str(data_dir / "lid" / "lid.176.ftz")
