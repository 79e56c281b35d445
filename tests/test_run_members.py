"""Which runs an experiment's parent is made of (`tracking.run_members`), on a real SQLite MLflow store."""
from __future__ import annotations

import uuid

import mlflow
import pytest

from tracking.run_members import join, members


@pytest.fixture
def client():
    return mlflow.MlflowClient()          # the session's store (conftest); every name here is new to it


def _experiment(client, name: str) -> str:
    return client.create_experiment(f"run-members-{name}-{uuid.uuid4().hex[:8]}")


def _roles(parent_id: str) -> dict[str, dict]:
    return {run.info.run_id: role for run, role in members(parent_id)}


def test_a_run_of_another_experiment_joins_and_a_retrained_role_replaces_the_old_run(client):
    parent = client.create_run(_experiment(client, "ablations")).info.run_id
    old, other, new = (client.create_run(_experiment(client, name)).info.run_id for name in "abc")
    join(parent, old, {"variant": "raw", "seed": 0})
    join(parent, other, {"variant": "+dedup", "seed": 0})
    assert _roles(parent) == {old: {"variant": "raw", "seed": 0}, other: {"variant": "+dedup", "seed": 0}}
    join(parent, new, {"variant": "raw", "seed": 0})
    assert _roles(parent) == {new: {"variant": "raw", "seed": 0}, other: {"variant": "+dedup", "seed": 0}}
    join(parent, new, {"variant": "raw", "seed": 0})                  # joining again changes nothing
    assert len(_roles(parent)) == 2


def test_a_recorded_run_the_store_no_longer_has_is_a_clear_error(client):
    parent = client.create_run(_experiment(client, "x")).info.run_id
    with pytest.raises(RuntimeError, match="is not in the tracking store .* delete the training's result file"):
        join(parent, "0" * 32, {"variant": "raw", "seed": 0})
