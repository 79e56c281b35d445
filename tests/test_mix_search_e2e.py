"""A tiny mixture search end to end, for real: the domain stage's topics on the small corpus, a swarm of three proxy
runs (torchrun on CPU), the mixing law fitted to their bits per byte, a proposal within the repetition limits,
and its validation ablation against the natural and uniform mixtures, all nested under one MLflow run."""
from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
import yaml

from configs.mix_search import parse_mix_search
from configs.parsing import RecipeError

TOKENS = 1024                     # 4 updates of 1 rank x 4 sequences x 64 tokens


@pytest.fixture(scope="module")
def search_raw(small_corpus, dask_address, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("mix_search")
    base = yaml.safe_load(open("configs/demo.yaml"))
    base |= {"store": str(out / "store"), "quality": {"enabled": False},
             # few hashed features and SVD components: the domain model is small (64 x 65,536 by default, ~34 MB)
             "domains": {"enabled": True, "topics": 3, "formats": 2, "hash_features": 4096, "components": 16},
             "input": {"paths": [str(small_corpus / "warc")], "source": "cc-sluice-small"},
             "dask": {"address": dask_address}}
    raw = yaml.safe_load(open("configs/mix_search.yaml")) | {
        "name": "mix-search-test", "base": base, "origin": ".", "swarm": {"size": 3, "seed": 0},
        "seeds": [0, 1], "tokens": TOKENS, "tokenizer": {"vocab_size": 600, "heldout_fraction": 0.1},
        "eval": {"ngram": 13, "domains": {
            "speeches": {"paths": ["{data_dir}/reference/speeches_nltk/inaugural/2005-Bush.txt"], "max_chars": 2500},
            "encyclopedic": {"paths": ["{data_dir}/reference/wikitext-2/wiki.test.raw"],
                             "format": "wikitext_articles", "max_chars": 2500}}},
        "mlflow": {"experiment": "mix-search-test"}}
    # one evaluation and one checkpoint, at the end; no sampled text; no logged model: the runs are measurements
    raw["train"] |= {"eval": {"every": 4, "batches": 1, "prompts": []}, "checkpoint": {"every": 4}, "log_every": 1,
                     "optimizer": {"lr": 0.01, "warmup_steps": 1},
                     "hardware": {"device": "cpu", "dtype": "fp32", "data_parallel": 1},
                     "mlflow": raw["train"]["mlflow"] | {"log_model": False}}
    return raw


@pytest.fixture(scope="module")
def searched(search_raw):
    from flows.mix_search import mix_search_flow

    search = parse_mix_search(search_raw)
    first = mix_search_flow(search)
    trainings = _training_runs(first["mlflow_run_id"])
    second = mix_search_flow(search)
    return first, second, trainings


def _training_runs(parent_id: str) -> list:
    experiment = mlflow.get_run(parent_id).info.experiment_id
    return mlflow.MlflowClient().search_runs([experiment], "tags.`sluice.kind` = 'ablation-run'")


def test_swarm_fit_proposal_and_validation_nest_under_one_run(searched):
    result, _, trainings = searched
    domains = result["domains"]
    assert domains["ids"] == [0, 1, 2] and min(domains["tokens"]) > 0
    assert np.isclose(sum(domains["natural"]), 1)
    members = result["swarm"]["members"]
    assert [member["name"] for member in members] == ["natural", "swarm-01", "swarm-02"]
    assert members[0]["weights"] == pytest.approx(domains["natural"], abs=1e-5)
    # the swarm's mixtures differ, and so (a little) do their trained models' scores
    assert len({tuple(member["weights"]) for member in members}) == 3
    assert len({member["measured"]["macro"] for member in members}) == 3
    for metric in ("macro", "encyclopedic", "speeches"):
        assert np.isfinite(result["fit"][metric]["mean_absolute_error"])
    proposed = np.array(result["mixtures"]["proposed"])
    assert np.isclose(proposed.sum(), 1) and (proposed <= np.array(domains["caps"]) + 1e-6).all()
    region, ranking = result["trust_region"], result["fit"]["macro"]["rank_correlation"]
    assert region["widened"] == (ranking is not None and ranking >= region["reliable"])
    natural = np.array(domains["natural"])
    assert (np.array(region["lower"]) <= 0.5 * natural + 1e-9).all() and (np.array(region["upper"]) >= np.minimum(
        2 * natural, domains["caps"]) - 1e-9).all()
    assert (np.array(region["lower"]) - 1e-6 <= proposed).all() and (proposed <= np.array(region["upper"]) + 1e-6).all()
    assert result["predicted_gain"] == pytest.approx(result["predicted"]["natural"] - result["predicted"]["proposed"])
    assert result["predicted"]["proposed"] <= min(result["predicted"].values()) + 1e-9
    # 3 swarm runs + 3 mixtures x 2 seeds, the natural mixture's first seed shared: 8 trainings
    assert len(trainings) == 8
    validation = result["validation"]
    assert set(validation["bpb"]) == {"natural", "uniform", "proposed"} and validation["seeds"] == [0, 1]
    assert validation["minimum_detectable_effect"] is not None
    assert validation["difference_proposed_minus_natural"] == pytest.approx(
        validation["bpb"]["proposed"]["macro"] - validation["bpb"]["natural"]["macro"])
    assert validation["realized_gain"] == pytest.approx(-validation["difference_proposed_minus_natural"])
    needed = validation["seeds_to_resolve_predicted_gain"]          # at the validation's own paired noise
    assert needed is None or needed >= 2
    assert all(words in result["markdown"] for words in ("predicted ", "realized ", "Trust region"))
    client = mlflow.MlflowClient()
    for part in (result["swarm"]["mlflow_run_id"], validation["mlflow_run_id"]):
        assert client.get_run(part).data.tags["mlflow.parentRunId"] == result["mlflow_run_id"]


def test_the_report_charts_and_figures_are_on_the_parent_run(searched, tmp_path):
    result = searched[0]
    run = mlflow.get_run(result["mlflow_run_id"])
    assert run.data.tags["sluice.kind"] == "mix-search"
    assert run.data.metrics["fit_mae_heldout"] == pytest.approx(result["fit"]["macro"]["mean_absolute_error"])
    assert "difference_proposed_minus_natural" in run.data.metrics
    saved = json.loads(mlflow.artifacts.load_text(f"runs:/{run.info.run_id}/mix_search.json"))
    assert saved["mixtures"]["proposed"] == result["mixtures"]["proposed"]
    charts = {item.path for item in mlflow.MlflowClient().list_artifacts(run.info.run_id, "charts")}
    assert charts == {"charts/predicted_vs_measured.png", "charts/weights.png"}
    # the swarm's ablation draws no charts of its own (its mixtures are neither few nor steps), the validation no steps
    swarm, validation = (set(item.path for item in mlflow.MlflowClient().list_artifacts(part, "charts"))
                         for part in (result["swarm"]["mlflow_run_id"], result["validation"]["mlflow_run_id"]))
    assert swarm == set() and validation == {"charts/bpb_vs_tokens.png", "charts/bpb_by_domain.png"}
    assert "| topic-0 |" in result["markdown"] and "## Validation" in result["markdown"]


def test_a_rerun_trains_nothing_and_continues_the_same_parent(searched):
    first, second, trainings = searched
    assert second["mlflow_run_id"] == first["mlflow_run_id"]
    assert len(_training_runs(first["mlflow_run_id"])) == len(trainings)
    assert second["mixtures"] == first["mixtures"]


def test_search_files_are_checked_before_any_work(search_raw):
    with pytest.raises(RecipeError, match="domain stage is off"):
        parse_mix_search(search_raw | {"base": search_raw["base"] | {"domains": {"enabled": False}}})
    with pytest.raises(RecipeError, match=r"domains: \[5\] are not topic ids"):
        parse_mix_search(search_raw | {"domains": [0, 5]})
    with pytest.raises(RecipeError, match="target 'poetry'"):
        parse_mix_search(search_raw | {"target": "poetry"})
