"""The deployments file and what it turns into (no server needed), and the compose file kept consistent."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from configs.deployments import DeploymentsFile, load_deployments
from flows.deployments import default_parameters, merged

ROOT = Path(__file__).resolve().parents[1]


def test_the_project_deployments_file_is_valid_and_its_recipes_load():
    for spec in load_deployments(ROOT / "configs/deployments.yaml").deployments:
        parameters = default_parameters(spec)
        assert list(parameters) == {"train": ["config"], "curation": ["recipe"], "ablation": ["ablation"],
                                    "sweep": ["sweep"], "mix-search": ["search"]}[spec.flow]
        if spec.flow == "sweep":       # the run form holds the data recipe itself
            assert isinstance(parameters["sweep"]["recipe"], dict)
        if spec.flow == "mix-search":  # and the base recipe, as an ablation's
            assert isinstance(parameters["search"]["base"], dict)


def test_overrides_are_merged_key_by_key_and_checked_by_the_recipe_model(monkeypatch):
    assert merged({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 5}, "e": 6}) == {"a": {"b": 5, "c": 2}, "d": 3, "e": 6}
    spec = DeploymentsFile.model_validate({"deployments": [
        {"name": "x", "flow": "curation", "recipe": "configs/demo.yaml",
         "overrides": {"dedup": {"minhash": {"bands": 20}}, "name": "x"}}]}).deployments[0]
    monkeypatch.setenv("SLUICE_DASK_ADDRESS", "tcp://10.0.0.5:8786")
    recipe = default_parameters(spec)["recipe"]
    assert recipe["dedup"]["minhash"]["bands"] == 20 and recipe["dedup"]["minhash"]["rows"] == 4
    assert recipe["dask"]["address"] == "tcp://10.0.0.5:8786" and recipe["name"] == "x"
    bad = spec.model_copy(update={"overrides": {"dedup": {"minhash": {"bands": 0}}}})
    with pytest.raises(Exception, match="dedup.minhash.bands"):
        default_parameters(bad)


@pytest.mark.parametrize("entry, message", [
    ({"interval_s": 60, "cron": "0 3 * * *"}, "not both"),
    ({"flow": "dedupe"}, "flow"),
    ({"concurrency_limit": 0}, "concurrency_limit"),
    ({"name": "has space"}, "name"),
])
def test_bad_deployments_are_refused_naming_the_field(entry, message):
    with pytest.raises(ValidationError, match=message):
        DeploymentsFile.model_validate({"deployments": [
            {"name": "x", "flow": "curation", "recipe": "configs/demo.yaml"} | entry]})


def test_the_compose_file_runs_what_sluice_server_runs():
    from flows.dask_cluster import HOUSEKEEPING_CONFIG_ENV, SCHEDULER_CONFIG_ENV, WORKER_CONFIG_ENV, WORKER_PRELOAD

    services = yaml.safe_load((ROOT / "docker/compose.yaml").read_text())["services"]
    worker = services["dask-worker"]["entrypoint"]
    assert [worker[i + 1] for i, arg in enumerate(worker) if arg == "--preload"] == list(WORKER_PRELOAD)
    assert (WORKER_CONFIG_ENV | HOUSEKEEPING_CONFIG_ENV).items() <= services["dask-worker"]["environment"].items()
    assert (SCHEDULER_CONFIG_ENV | HOUSEKEEPING_CONFIG_ENV).items() <= services["dask-scheduler"]["environment"].items()
    assert services["deployments"]["entrypoint"][-1] == "configs/deployments.yaml"
    assert "--serve-artifacts" in services["mlflow"]["entrypoint"]
