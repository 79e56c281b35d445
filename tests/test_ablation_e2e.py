"""A tiny ablation end to end, for real: Prefect flows on a Dask LocalCluster, torchrun FSDP2 on CPU ranks, SQLite
MLflow. Two variants x two seeds on the small corpus plus one page that copies an evaluation text.

What costs time here is launching a training run (torchrun, two ranks importing torch, the run's MLflow records and
its logged model), not its few updates: the module launches ten. The first ablation trains its variance split in
the same flow (the split's test reads it; the plain rerun that follows shows the flag leaves the ablation and its
comparison as they were), the recipe skips the domain stages no check reads, and a run checkpoints only at its end
unless a test needs one before."""
from __future__ import annotations

import glob
import html
import io
import json
import os
import signal
import subprocess
import sys
import time

import mlflow
import pytest
import torch
import yaml
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from configs.ablation import parse_ablation
from flows.training_inputs import trainer_code_version

SPEECH = "reference/speeches_nltk/inaugural/2005-Bush.txt"
PLANTED_URL = "http://planted.example.org/inaugural-2005.html"
TOKENS = 2048                     # 4 updates of 2 ranks x 4 sequences x 64 tokens
UPDATES = 4


def _planted_warc(path, data_dir) -> None:
    """One HTML page whose article is the first lines of an evaluation text."""
    lines = [line for line in (data_dir / SPEECH).read_text(encoding="utf-8", errors="replace").splitlines()
             if line.strip()][:12]
    page = ("<html lang='en'><head><title>A speech</title></head><body><article>"
            + "".join(f"<p>{html.escape(line)}</p>" for line in lines) + "</article></body></html>").encode()
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(PLANTED_URL, "response", payload=io.BytesIO(page),
                                                      http_headers=headers))


@pytest.fixture(scope="module")
def ablation_raw(small_corpus, data_dir, dask_address, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("ablation")
    (out / "planted").mkdir()
    _planted_warc(out / "planted" / "planted.warc.gz", data_dir)
    base = yaml.safe_load(open("configs/demo.yaml"))
    base |= {"store": str(out / "store"), "quality": {"enabled": False},
             "input": {"paths": [str(small_corpus / "warc"), str(out / "planted")], "source": "cc-sluice-small"},
             "dask": {"address": dask_address},
             "domains": {"enabled": False}}        # topic and format clusters: no check reads them (~30 s a variant)
    raw = yaml.safe_load(open("configs/ablation.yaml")) | {
        "name": "ablation-test", "base": base, "baseline": "raw", "origin": ".",
        "variants": {"raw": {"dedup": {"enabled": False}}, "+dedup": {}},
        "seeds": [0, 1], "tokens": TOKENS, "max_epochs": 8,
        "tokenizer": {"vocab_size": 600, "heldout_fraction": 0.1},
        "eval": {"ngram": 13, "domains": {
            "speeches": {"paths": [f"{{data_dir}}/{SPEECH}"], "max_chars": 2500},
            "encyclopedic": {"paths": ["{data_dir}/reference/wikitext-2/wiki.test.raw"],
                             "format": "wikitext_articles", "max_chars": 2500}}},
        "mlflow": {"experiment": "ablation-test"}}
    # 4 updates that learn the unigrams at least; two evaluations (a curve), one short sample each; the one
    # checkpoint at the end (the killed ablation's test asks for one before)
    raw["train"] |= {"eval": {"every": 2, "batches": 1, "prompts": ["The"], "sample_tokens": 8},
                     "checkpoint": {"every": UPDATES}, "log_every": 1, "optimizer": {"lr": 0.01, "warmup_steps": 1}}
    return raw


@pytest.fixture(scope="module")
def ablation_config(ablation_raw):
    return parse_ablation(ablation_raw)


@pytest.fixture(scope="module")
def ablation_runs(ablation_raw, ablation_config):
    """The ablation with --variance-split (its runs and the baseline's split runs), then rerun without it; the loss
    history lengths of every run the first trained (members and split runs) between the two."""
    from flows.ablation import ablation_flow

    first = ablation_flow(parse_ablation(ablation_raw | {"variance_split": True}))
    histories = _histories(_trained_runs(first["mlflow_run_id"]))
    second = ablation_flow(ablation_config)
    return first, second, histories


def _children(parent_id: str) -> list:
    from flows.ablation_report import training_runs

    return list(training_runs(parent_id).values())


def _split_runs(parent_id: str) -> list:
    """The variance split's runs nested under the ablation's run (not members of its comparison)."""
    from flows.ablation_report import SPLIT_KIND

    experiment_id = mlflow.get_run(parent_id).info.experiment_id
    return mlflow.MlflowClient().search_runs([experiment_id], filter_string=(
        f"tags.`mlflow.parentRunId` = '{parent_id}' and tags.`sluice.kind` = '{SPLIT_KIND}'"))


def _trained_runs(parent_id: str) -> list[str]:
    """Every training run of the ablation: the compared runs and the variance split's."""
    return sorted(run.info.run_id for run in _children(parent_id) + _split_runs(parent_id))


def _histories(run_ids) -> dict[str, int]:
    client = mlflow.MlflowClient()
    return {run_id: len(client.get_metric_history(run_id, "loss")) for run_id in run_ids}


def _uniform_bpb(suite_path: str, tokenizer_path: str) -> float:
    """Bits per byte of the suite under a uniform prediction over the vocabulary, per domain, macro-averaged."""
    import math

    import sentencepiece as spm

    from tasks.evaluation.suite import read_suite

    processor = spm.SentencePieceProcessor(model_file=tokenizer_path)
    tokens, size = {}, {}
    for doc in read_suite(suite_path):
        tokens[doc["domain"]] = tokens.get(doc["domain"], 0) + len(processor.encode(doc["text"])) + 1
        size[doc["domain"]] = size.get(doc["domain"], 0) + len(doc["text"].encode())
    bits = math.log2(processor.get_piece_size())
    return sum(bits * tokens[domain] / size[domain] for domain in tokens) / len(tokens)


def test_nested_runs_with_datasets_table_and_charts(ablation_runs):
    first, second, _ = ablation_runs
    parent_id = first["mlflow_run_id"]
    client = mlflow.MlflowClient()
    children = _children(parent_id)
    assert sorted((run.data.tags["sluice.variant"], run.data.tags["sluice.seed"]) for run in children) == \
        [("+dedup", "0"), ("+dedup", "1"), ("raw", "0"), ("raw", "1")]
    for run in children:
        assert run.info.status == "FINISHED" and run.data.tags["mlflow.parentRunId"] == parent_id
        description = run.data.tags["mlflow.note.content"]          # the run page's description
        assert f"variant `{run.data.tags['sluice.variant']}`, seed {run.data.tags['sluice.seed']}." in description
        assert run.data.tags["sluice.mixture_digest"] in description
        contexts = {tag.value for dataset in run.inputs.dataset_inputs for tag in dataset.tags
                    if tag.key == "mlflow.data.context"}
        assert contexts == {"training", "evaluation"}
        assert {"suite_bpb/speeches", "suite_bpb/encyclopedic", "suite_bpb/macro"} <= set(run.data.metrics)
        curve = [metric.value for metric in sorted(client.get_metric_history(run.info.run_id, "suite_bpb/macro"),
                                                   key=lambda metric: metric.step)]
        # it scores better as it trains, and far better than an untrained model (about uniform over the vocabulary)
        untrained = _uniform_bpb(run.data.params["eval.suite"], run.data.params["data.tokenizer"])
        assert len(curve) == 2 and curve[-1] < curve[0] and curve[-1] < 0.9 * untrained, (curve, untrained)
        assert run.data.tags["sluice.trainer_code"] == trainer_code_version()
    table = first["table"]
    assert list(table["variants"]) == ["raw", "+dedup"]
    cell = table["variants"]["+dedup"]["metrics"]["macro"]
    assert cell["n"] == 2 and cell["std"] > 0                 # each seed draws its own mixture: the scores differ
    versus = table["variants"]["+dedup"]["vs_baseline"]["macro"]
    assert versus["pairs"] == 2 and versus["paired_std"] > 0 and versus["mde"] > abs(versus["difference"])
    assert f"{versus['mde']:.4f}" in first["verdict"] and first["verdict"].startswith(
        ("+dedup vs raw: no difference larger than", "+dedup vs raw: underpowered", "+dedup beats", "raw beats"))
    parent = client.get_run(parent_id)
    # the run page's description: the report of the last run of the ablation (the rerun, without the split)
    assert parent.data.tags["mlflow.note.content"] == second["markdown"]
    assert parent.data.metrics["detectable/macro"] == pytest.approx(versus["mde"])
    assert parent.data.metrics["called/macro"] == 0.0
    charts = {entry.path for entry in client.list_artifacts(parent_id, "charts")}
    assert charts == {"charts/bpb_vs_tokens.png", "charts/bpb_by_domain.png"}
    assert {entry.path for entry in client.list_artifacts(parent_id)} >= {"comparison.json", "comparison.md"}


def test_each_trained_model_is_an_mlflow_logged_model_that_scores_and_samples_by_uri(ablation_runs, tmp_path):
    """Loaded by URI in this one process, the model scores the suite to the bits per byte its run logged (there on
    FSDP ranks), and `sluice sample` continues a prompt with it."""
    from configs.tokenizer import EOS_ID
    from training.exact_bpb import bits_per_byte_by_domain, load_suite, model_window_nll, suite_nll
    from flows.logged_model import load_language_model

    first, _, _ = ablation_runs
    client = mlflow.MlflowClient()
    run = _children(first["mlflow_run_id"])[0]
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    models = mlflow.search_logged_models(experiment_ids=[experiment.experiment_id], output_format="list",
                                         filter_string=f"source_run_id = '{run.info.run_id}'")
    assert len(models) == 1 and models[0].tags["sluice.tokenizer_digest"] == run.data.tags["sluice.tokenizer_digest"]
    uri = f"models:/{models[0].model_id}"
    loaded = load_language_model(uri)
    seq_len = loaded.model.config.seq_len
    suite = load_suite(run.data.params["eval.suite"], run.data.params["data.tokenizer"], EOS_ID, seq_len)
    nll = suite_nll(model_window_nll(loaded.model), suite, seq_len, 4, 0, 1, torch.device("cpu"))
    scores = bits_per_byte_by_domain(nll, suite)
    assert scores["macro"] == pytest.approx(run.data.metrics["suite_bpb/macro"], abs=1e-4)

    sampled = subprocess.run([sys.executable, "-m", "cli", "sample", uri, "The", "--new-tokens", "8"],
                             capture_output=True, text=True, timeout=300)
    assert sampled.returncode == 0, sampled.stderr[-2000:]
    # greedy, a model this small may continue with spaces: something follows the prompt, whatever it is
    assert sampled.stdout.startswith("The") and len(sampled.stdout.rstrip("\n")) > len("The")
    assert "type hints" not in sampled.stderr, sampled.stderr      # MLflow asks for them on `predict`, unless hinted


def test_a_browser_shows_a_training_runs_datasets_and_logged_model(ablation_runs):
    """MLflow's own UI, served over the test's tracking database: the training run page lists the mixture and the
    suite as datasets and the trained model as a logged model."""
    from pathlib import Path

    from browser import Browser          # tests/browser.py (pytest puts tests/ on the path)
    from flows.processes import free_port
    from tracking.store import run_page_url

    first, _, _ = ablation_runs
    run = _children(first["mlflow_run_id"])[0]
    port = free_port()
    ui = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                           "--workers", "1", "--backend-store-uri", mlflow.get_tracking_uri()],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    browser = None
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if mlflow.MlflowClient(f"http://127.0.0.1:{port}").get_run(run.info.run_id):
                    break
            except Exception:
                if time.monotonic() > deadline or ui.poll() is not None:
                    raise
                time.sleep(1)
        browser = Browser()
        browser.open(run_page_url(f"http://127.0.0.1:{port}", run.info.experiment_id, run.info.run_id))
        datasets = [dataset.dataset.name for dataset in run.inputs.dataset_inputs]
        mixture = next(name for name in datasets if name.startswith("mixture-"))
        browser.wait_for_text(["Model training", "Datasets", mixture, "Logged models (1)", "Ready"])
        shots = Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"
        browser.screenshot(shots / "mlflow-ablation-run-datasets-and-model.png")
    finally:
        if browser:
            browser.close()
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=30)


def test_matched_tokens_and_one_tokenizer(ablation_runs):
    first, _, _ = ablation_runs
    client = mlflow.MlflowClient()
    children = _children(first["mlflow_run_id"])
    for run in children:
        steps = [metric.step for metric in client.get_metric_history(run.info.run_id, "loss")]
        assert max(steps) * int(run.data.tags["sluice.tokens_per_update"]) == TOKENS
    assert len({run.data.tags["sluice.tokenizer_digest"] for run in children}) == 1
    from flows.ablation_report import histories

    curves = histories(first["mlflow_run_id"])            # the charts' x axis: tokens as trained
    assert {points[-1][0] for seeds in curves.values() for points in seeds.values()} == {TOKENS}
    import sentencepiece as spm

    from tasks.evaluation.suite import read_suite

    params = children[0].data.params            # the shared tokenizer is lossless: every suite byte is predicted
    processor = spm.SentencePieceProcessor(model_file=params["data.tokenizer"])
    texts = [doc["text"] for doc in read_suite(params["eval.suite"])]
    assert texts and all(processor.decode(processor.encode(text)) == text for text in texts)
    assert len({run.data.tags["sluice.mixture_digest"] for run in children}) == 4   # seeded draws differ
    assert all(row["epochs"] > 0 for row in first["why"].values())


def test_a_planted_copy_of_an_eval_text_is_removed_before_training_and_counted(ablation_runs):
    first, _, _ = ablation_runs
    for variant, row in first["why"].items():
        removed = row["removed"]["decontaminate"]["eval_contamination"]
        assert removed["documents"] >= 1 and removed["bytes"] > 1000 and removed["tokens"] > 100, variant


def test_rerunning_a_finished_ablation_trains_nothing(ablation_runs):
    first, second, histories = ablation_runs
    assert second["mlflow_run_id"] == first["mlflow_run_id"]
    assert len(histories) == 4 + 3                  # the compared runs and the split's: no run new, none trained on
    assert _histories(_trained_runs(first["mlflow_run_id"])) == histories
    assert second["table"]["variants"] == first["table"]["variants"]


def test_sluice_compare_prints_the_table_from_mlflow(ablation_runs, capsys):
    from cli.main import main

    first, _, _ = ablation_runs
    assert main(["compare", first["mlflow_run_id"]]) == 0
    printed = capsys.readouterr().out
    assert "| raw |" in printed and "| +dedup |" in printed and f"Verdict: {first['verdict']}" in printed
    assert main(["compare", first["mlflow_run_id"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["baseline"] == "raw"


def test_another_ablation_of_the_same_trainings_reuses_and_compares_them(ablation_raw, ablation_runs):
    """A renamed copy of the ablation is a new parent run: it trains nothing, joins the runs the first one trained
    and compares exactly those; the first ablation's comparison stays as it was."""
    from flows.ablation import ablation_flow
    from flows.ablation_report import comparison

    first, _, histories = ablation_runs
    again = ablation_flow(parse_ablation(ablation_raw | {"name": "ablation-test-again"}))
    assert again["mlflow_run_id"] != first["mlflow_run_id"]
    assert again["table"]["runs"] == first["table"]["runs"] and len(first["table"]["runs"]["raw"]) == 2
    assert again["table"]["variants"] == first["table"]["variants"]
    assert comparison(first["mlflow_run_id"])["variants"] == first["table"]["variants"]
    client = mlflow.MlflowClient()
    assert {run_id: len(client.get_metric_history(run_id, "loss")) for run_id in histories} == histories


def test_seed_rounds_add_seeds_until_called_or_the_cap_testing_at_the_spent_alpha(ablation_raw, ablation_runs):
    """One seed, then a round of one more up to two: one seed cannot be called, so the second look runs (its runs
    are the first ablation's, found in the store) and the verdict tests at alpha / 2."""
    from flows.ablation import ablation_flow

    first, _, histories = ablation_runs
    rounds = ablation_flow(parse_ablation(ablation_raw | {"name": "ablation-rounds", "seeds": [0],
                                                          "seed_rounds": {"max": 2, "step": 1}}))
    parent = mlflow.MlflowClient().get_run(rounds["mlflow_run_id"])
    assert json.loads(parent.data.tags["sluice.seeds"]) == [0, 1] and float(parent.data.tags["sluice.alpha"]) == 0.025
    assert rounds["table"]["runs"] == first["table"]["runs"] and rounds["table"]["power"]["alpha"] == 0.025
    assert rounds["table"]["variants"]["+dedup"]["vs_baseline"]["macro"]["mde"] > \
        first["table"]["variants"]["+dedup"]["vs_baseline"]["macro"]["mde"]        # a stricter test detects less
    client = mlflow.MlflowClient()
    assert {run_id: len(client.get_metric_history(run_id, "loss")) for run_id in histories} == histories


def test_the_variance_split_trains_the_baseline_with_each_seed_control_alone(ablation_runs):
    """With --variance-split the baseline is trained again with one seed control varying at a time (its first seed
    is the main run); the split says which part of the noise each control holds and leaves the comparison as it
    was. (The fixture's first ablation has the flag; its rerun without it is the same ablation, the same table.)"""
    first, second, _ = ablation_runs
    assert second["mlflow_run_id"] == first["mlflow_run_id"]           # the same ablation, with or without the flag
    assert first["table"]["runs"] == second["table"]["runs"]
    assert {key: value for key, value in first["table"].items() if key != "variance_split"} == second["table"]
    split = first["table"]["variance_split"]
    assert split["variant"] == "raw" and set(split["controls"]) == {"init", "data_order", "mixture_draw"}
    assert all(row["seeds"] == 2 and row["std"] > 0 for row in split["controls"].values())
    assert sum(row["share"] for row in split["controls"].values()) == pytest.approx(1.0)
    assert "one seed control varied at a time" in first["markdown"]
    assert "one seed control varied at a time" not in second["markdown"]
    # trained anew: the baseline at the second seed, once per control; at the first seed each control's run is the
    # main run (every control at that seed); none of them is compared
    runs = _split_runs(first["mlflow_run_id"])
    assert sorted((run.data.tags["sluice.variant"], run.data.tags["sluice.seed"], run.data.tags["sluice.seed_controls"])
                  for run in runs) == [("raw", "1", "data_order"), ("raw", "1", "init"), ("raw", "1", "mixture_draw")]
    assert all(run.info.status == "FINISHED" for run in runs)
    compared = {run_id for seeds in first["table"]["runs"].values() for run_id in seeds.values()}
    assert not compared & {run.info.run_id for run in runs}


def _checkpointed_unfinished_run(train_dir: str, before: set[str]) -> str | None:
    """A training folder this ablation made that has a complete checkpoint and no result yet, once another
    folder of this ablation has finished (so the kill lands in the second run, after the first)."""
    from flows.ablation import RESULT_FILE

    new = [path for path in glob.glob(f"{train_dir}/*") if path not in before]
    finished = [path for path in new if os.path.exists(f"{path}/{RESULT_FILE}")]
    for path in new:
        if finished and path not in finished and glob.glob(f"{path}/step-*/complete"):
            return path
    return None


def test_a_killed_ablation_resumes_and_a_given_tokenizer_is_used_as_is(ablation_raw, ablation_runs, tmp_path):
    """Kill the whole ablation (flow process and trainer group) in its second training run, after a checkpoint;
    the rerun skips the finished run, continues the killed one from its checkpoint in the same MLflow run, and
    trains with the tokenizer file it was given."""
    from flows.ablation import RESULT_FILE
    from flows.dask_cluster import prefect_api_env
    from flows.training_flow import LAUNCHER_RECORD
    from storage.manifest import sha256_file

    store = ablation_raw["base"]["store"]
    given = sorted(glob.glob(f"{store}/tokenizer/*/tokenizer.model"))[0]
    raw = json.loads(json.dumps(ablation_raw)) | {"name": "ablation-resume", "seeds": [2], "tokens": 2 * TOKENS,
                                                  "tokenizer": {"path": given}}
    raw["train"]["checkpoint"] = {"every": 2}
    # no check here reads a logged model or the curve: skip the model, evaluate at the middle and the end only
    raw["train"]["eval"] |= {"every": UPDATES}
    raw["train"]["mlflow"] = raw["train"].get("mlflow", {}) | {"log_model": False}
    config_file = tmp_path / "ablation.yaml"
    config_file.write_text(yaml.safe_dump(raw))
    train_dir = f"{store}/train"
    before = set(glob.glob(f"{train_dir}/*"))
    script = ("import sys, yaml; from configs.ablation import parse_ablation; from flows.ablation import ablation_flow; "
              "ablation_flow(parse_ablation(yaml.safe_load(open(sys.argv[1]))))")
    # the flow process to kill talks to this session's Prefect server rather than starting its own (~6 s)
    process = subprocess.Popen([sys.executable, "-c", script, str(config_file)], start_new_session=True,
                               env=os.environ | prefect_api_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    killed = None
    while killed is None and process.poll() is None and time.monotonic() < deadline:
        killed = _checkpointed_unfinished_run(train_dir, before)
        time.sleep(0.05)
    try:
        assert killed is not None, "the ablation ended or timed out before its second run checkpointed"
        with open(f"{killed}/{LAUNCHER_RECORD}") as handle:
            trainer_group = json.load(handle)["pgid"]
        for group in (process.pid, trainer_group):
            os.killpg(group, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    killed_at_ms = time.time() * 1000
    finished_first = [path for path in glob.glob(f"{train_dir}/*") if path not in before and path != killed]
    with open(f"{finished_first[0]}/{RESULT_FILE}") as handle:
        first_result = json.load(handle)
    client = mlflow.MlflowClient()
    first_history = len(client.get_metric_history(first_result["mlflow_run_id"], "loss"))

    from flows.ablation import ablation_flow

    result = ablation_flow(parse_ablation(raw))
    children = _children(result["mlflow_run_id"])
    assert sorted(run.data.tags["sluice.variant"] for run in children) == ["+dedup", "raw"]
    assert len(client.get_metric_history(first_result["mlflow_run_id"], "loss")) == first_history  # not retrained
    with open(f"{killed}/{RESULT_FILE}") as handle:
        resumed_id = json.load(handle)["mlflow_run_id"]
    assert resumed_id in {run.info.run_id for run in children}
    history = client.get_metric_history(resumed_id, "loss")
    assert {metric.step for metric in history} == set(range(1, 9))
    after_kill = {metric.step for metric in history if metric.timestamp > killed_at_ms}
    assert after_kill and min(after_kill) > 2, after_kill   # continued from a checkpoint, not from step 1
    for run in children:
        used = run.data.params["data.tokenizer"]
        assert used != given and sha256_file(used) == sha256_file(given)
