"""A scaling ladder for real: the demo recipe's data on the small corpus, 3 model sizes x 2 token budgets trained
under torchrun, nested under one MLflow run, then L(N, D) fitted to the final validation losses."""
from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
import yaml

from configs.parsing import RecipeError
from configs.sweep import parse_sweep

pytestmark = pytest.mark.slow

MODELS = [{"d_model": 16, "n_layers": 1, "n_heads": 2}, {"d_model": 32, "n_layers": 1, "n_heads": 2},
          {"d_model": 48, "n_layers": 2, "n_heads": 2}]
TOKENS = [1024, 2048]           # 2 and 4 updates of 4 x 64 tokens on 2 ranks


@pytest.fixture(scope="module")
def sweep_raw(small_corpus, dask_address, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("sweep")
    recipe = yaml.safe_load(open("configs/demo.yaml"))
    recipe |= {"store": str(out / "store"), "quality": {"enabled": False}, "dedup": {"enabled": False},
               "domains": {"enabled": False},        # the ladder's data needs no topics or formats
               "tokenizer": recipe["tokenizer"] | {"vocab_size": 600},
               "input": {"paths": [str(small_corpus / "warc")], "source": "cc-sluice-small"},
               "dask": {"address": dask_address}}    # the session's cluster: no cluster of its own per sweep_flow
    raw = yaml.safe_load(open("configs/ladder.yaml"))
    raw["train"]["eval"] |= {"prompts": []}          # no sampled text: the points are measurements
    return raw | {"name": "sweep-test", "recipe": recipe, "models": MODELS, "tokens": TOKENS, "origin": ".",
                  "mlflow": {"experiment": "sweep-test"},
                  "fit_resamples": 10}      # intervals are checked for shape here, not width: 200 refits cost ~15 s


@pytest.fixture(scope="module")
def sweep_runs(sweep_raw):
    from flows.sweep import sweep_flow

    sweep = parse_sweep(sweep_raw)
    first = sweep_flow(sweep)
    second = sweep_flow(sweep)        # everything recorded: trains nothing, fits nothing
    return first, second


def test_every_point_is_a_nested_run_with_its_n_d_and_final_loss(sweep_runs):
    first, _ = sweep_runs
    runs = first["runs"]
    assert [(run["n_params"], run["tokens"]) for run in runs] == sorted(
        (n, d) for n in {run["n_params"] for run in runs} for d in TOKENS)
    assert len({run["n_params"] for run in runs}) == 3
    client = mlflow.MlflowClient()
    for run in runs:
        found = client.get_run(run["mlflow_run_id"])
        assert found.data.tags["mlflow.parentRunId"] == first["mlflow_run_id"]
        assert int(found.data.tags["sluice.n_params"]) == run["n_params"]
        assert int(found.data.tags["sluice.tokens"]) == run["tokens"]
        assert found.data.metrics["val_loss"] == pytest.approx(run["val_loss"])
        history = client.get_metric_history(run["mlflow_run_id"], "loss")
        assert max(metric.step for metric in history) == run["tokens"] // 512


def test_the_fit_is_logged_with_intervals_hold_out_and_chart(sweep_runs):
    first, _ = sweep_runs
    fit = first["fit"]
    assert {point["run_id"] for point in fit["points"]} == {run["mlflow_run_id"] for run in first["runs"]}
    for name, value in fit["law"].items():
        low, high = fit["intervals"][name]
        assert low <= value <= high or low == pytest.approx(high), name
    assert fit["holdout"]["held_out_n_params"] == max(run["n_params"] for run in first["runs"])
    assert len(fit["holdout"]["points"]) == len(TOKENS)
    best = fit["compute_optimal"]
    assert 6 * best["n_params"] * best["tokens"] == pytest.approx(best["flops"])
    client = mlflow.MlflowClient()
    logged = {item.path for item in client.list_artifacts(first["mlflow_run_id"], "scaling")}
    assert logged == {"scaling/law.json", "scaling/fit.md", "scaling/scaling_law.png"}
    with open(client.download_artifacts(first["mlflow_run_id"], "scaling/law.json")) as handle:
        assert json.load(handle)["law"] == pytest.approx(fit["law"])


def test_a_rerun_trains_and_fits_nothing_and_continues_the_same_parent_run(sweep_runs):
    first, second = sweep_runs
    assert second["mlflow_run_id"] == first["mlflow_run_id"]
    assert second["runs"] == first["runs"]
    client = mlflow.MlflowClient()
    children = client.search_runs([mlflow.get_experiment_by_name("sweep-test").experiment_id],
                                  filter_string=f"tags.mlflow.parentRunId = '{first['mlflow_run_id']}'")
    assert len(children) == len(MODELS) * len(TOKENS)
    # the logged fit, not a new one: logged once
    assert second["fit"] == json.loads(json.dumps(first["fit"]))
    assert len(client.get_metric_history(first["mlflow_run_id"], "scaling.E")) == 1


def test_a_fitted_law_sizes_a_run_in_sluice_plan(sweep_runs, tmp_path, capsys):
    from cli.main import main

    first, _ = sweep_runs
    law = tmp_path / "law.json"
    law.write_text(json.dumps(first["fit"]))
    assert main(["plan", "configs/train_seed003.yaml", "--law", str(law), "--inference-tokens", "1e12",
                 "--json"]) == 0
    lifetime = json.loads(capsys.readouterr().out)["lifetime"]
    assert lifetime["law"] == pytest.approx(first["fit"]["law"])
    assert lifetime["inference_aware"]["total_flops"] <= lifetime["chinchilla_optimal"]["total_flops"]


def test_sweep_files_are_checked_before_any_work(sweep_raw):
    for change, message in [({"models": MODELS + [MODELS[0]]}, "two entries are the same model"),
                            ({"models": [{"d_modle": 8}]}, r"models\[0\]:\n  d_modle: Extra inputs"),
                            ({"tokens": [1024, 1024]}, "positive and distinct"),
                            ({"train": sweep_raw["train"] | {"tokens": 5}}, "each run's length"),
                            ({"recipe": sweep_raw["recipe"] | {"dedup": {"bogus": 1}}}, "recipe: invalid recipe")]:
        with pytest.raises(RecipeError, match=message):
            parse_sweep(sweep_raw | change)


def test_a_mup_sweep_logs_the_coordinate_check_at_its_widths(sweep_runs, sweep_raw):
    from flows.sweep import _log_coordinate_check

    first, _ = sweep_runs
    models = [model | {"parametrization": "mup", "base_width": 16} for model in MODELS]
    points = parse_sweep(sweep_raw | {"models": models}).points()
    _log_coordinate_check(points, 600, first["mlflow_run_id"])
    client = mlflow.MlflowClient()
    assert {"coord_check.png", "coord_check.json"} <= {item.path for item in client.list_artifacts(first["mlflow_run_id"])}
    with open(client.download_artifacts(first["mlflow_run_id"], "coord_check.json")) as handle:
        checked = json.load(handle)
    assert sorted(int(width) for width in checked["mup"]["sizes"]) == [16, 32, 48]
    assert checked["sp"]["slopes"]["logits"] > checked["mup"]["slopes"]["logits"]


def test_the_points_share_one_warm_torchrun_and_each_trains_as_a_fresh_one_would(sweep_runs, sweep_raw, tmp_path):
    """The sweep's points trained one after another in the ranks of one torchrun (flows/trainer_pool.py); the last
    of them, trained again by a torchrun of its own, ends at the same losses to the bit: a run's result does not
    depend on the runs its trainer trained before."""
    from configs.training import TrainingConfig
    from flows.training_flow import LAUNCHER_RECORD, training_flow

    first, _ = sweep_runs
    folders = [path.parent for path in Path(sweep_raw["recipe"]["store"], "train").glob(f"*/{LAUNCHER_RECORD}")]
    assert len(folders) == len(first["runs"])
    assert len({json.loads((folder / LAUNCHER_RECORD).read_text())["pgid"] for folder in folders}) == 1
    configs = [TrainingConfig.model_validate(yaml.safe_load((folder / "train.yaml").read_text())) for folder in folders]
    last = max(configs, key=lambda config: int(config.mlflow.tags["sluice.point"]))
    alone = training_flow(last.model_copy(update={
        "checkpoint": last.checkpoint.model_copy(update={"dir": str(tmp_path / "alone")}),
        "mlflow": last.mlflow.model_copy(update={"experiment": "sweep-test-alone", "tags": {}, "log_model": False})}))
    pooled = first["runs"][int(last.mlflow.tags["sluice.point"])]
    assert (alone["loss"], alone["val_loss"]) == (pooled["loss"], pooled["val_loss"])
    launched = json.loads((tmp_path / "alone" / LAUNCHER_RECORD).read_text())["pgid"]
    assert launched != json.loads((folders[0] / LAUNCHER_RECORD).read_text())["pgid"]
