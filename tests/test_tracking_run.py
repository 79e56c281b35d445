"""A pipeline run's MLflow run opens on a thread while the first stage starts: the first stage report makes it the
flow thread's active run, an error opening it surfaces there, and a run that fails before any stage logged is
still marked failed."""
from __future__ import annotations

import mlflow
import pytest

from configs.parsing import RecipeError
from configs.schema import load_recipe, parse_recipe
from flows.tracking_run import BackgroundRun, activate_pending_run, pending
from tracking.store import use_experiment


def _opened(name: str) -> str:
    use_experiment("tracking-run", None)
    return mlflow.MlflowClient().create_run(mlflow.get_experiment_by_name("tracking-run").experiment_id,
                                            run_name=name).info.run_id


def test_the_run_becomes_active_where_it_is_first_needed():
    opening = BackgroundRun(lambda: _opened("background"))
    assert mlflow.active_run() is None
    activate_pending_run()                                  # nothing pending: nothing happens
    assert mlflow.active_run() is None
    with pending(opening):
        activate_pending_run()
        activate_pending_run()                              # already active: not started twice
        assert mlflow.active_run().info.run_id == opening.run_id()
    mlflow.end_run()
    assert mlflow.get_run(opening.run_id()).info.status == "FINISHED"


def test_an_error_opening_the_run_is_raised_where_the_run_is_needed():
    def unreachable() -> str:
        raise ConnectionError("tracking server down")

    opening = BackgroundRun(unreachable)
    assert opening.opened_id() is None
    with pending(opening), pytest.raises(RuntimeError, match="could not open") as raised:
        activate_pending_run()
    assert isinstance(raised.value.__cause__, ConnectionError)


def test_a_run_that_fails_before_any_stage_logged_is_marked_failed(tmp_path, dask_address):
    from flows.curation import curation_flow

    raw = load_recipe("configs/demo.yaml").model_dump()
    raw["input"]["paths"] = [str(tmp_path / "no-such-crawl")]
    raw |= {"name": "fails-early", "store": str(tmp_path / "store"), "dask": {"address": dask_address}}
    raw["mlflow"]["experiment"] = "fails-early"
    with pytest.raises(RecipeError, match="input.paths.0.: input .*no-such-crawl' does not exist"):
        curation_flow(parse_recipe(raw))
    runs = mlflow.search_runs(experiment_names=["fails-early"], output_format="list")
    assert [run.info.status for run in runs] == ["FAILED"]
    assert runs[0].data.params["name"] == "fails-early"            # the recipe was logged all the same
