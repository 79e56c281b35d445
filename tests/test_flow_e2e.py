"""The curation flow for real: ephemeral Prefect server, a Dask LocalCluster (2 workers), SQLite MLflow, the
seeded small corpus. Checks the output against the corpus labels, then reruns (cached) and resumes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from storage.document_shard import read_documents
from storage.stage_figures import (DedupFigures, MixtureFigures, QualityFilterFigures, QualityModelsFigures,
                                   TokenizerFigures)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def recipe(demo_recipe):
    return demo_recipe


@pytest.fixture(scope="module")
def traced_run(traced_demo_run):
    return traced_demo_run


@pytest.fixture(scope="module")
def first_run(traced_run):
    return traced_run[0]


def _untrained(recipe):
    """The recipe without its training run: the reruns below check the data stages, and a torchrun costs ~10 s."""
    return recipe.model_copy(update={"train": recipe.train.model_copy(update={"enabled": False})})


def _labels(corpus: Path) -> list[dict]:
    return [json.loads(line) for line in (corpus / "labels.jsonl").read_text().splitlines()]


def _documents(extract: dict):
    stage_dir = Path(extract["manifest"]).parent
    return [read_documents(str(path)) for path in sorted((stage_dir / "shards").glob("*.parquet"))]


def test_documents_match_the_corpus_ground_truth(first_run, small_corpus):
    extract = first_run["stages"]["extract"]
    assert not extract["cached"]
    stats = extract["stats"]
    assert stats["candidates"] == stats["documents_out"] + sum(stats["drops"].values())
    tables = _documents(extract)
    assert len(tables) == 4
    record_ids = [rid for table in tables for rid in table.column("warc_record_id").to_pylist()]
    assert len(record_ids) == stats["documents_out"] == len(set(record_ids))
    labels = _labels(small_corpus)
    expected = {label["record_id"] for label in labels if label["expect_document"]}
    not_documents = {label["record_id"] for label in labels if not label["expect_document"]}
    assert not set(record_ids) & not_documents          # no 404/5xx/redirect/non-HTML/truncated record leaks in
    assert len(set(record_ids) & expected) >= 0.95 * len(expected)
    for reason in ("http_client_error", "http_server_error", "http_redirect", "non_html"):
        assert stats["drops"].get(reason, 0) > 0
    assert stats["problems"].get("truncated_record") == 1  # the corpus' cut-off tail


def test_language_ids_agree_with_the_page_labels(first_run, small_corpus):
    by_record = {label["record_id"]: label["lang"] for label in _labels(small_corpus) if label["lang"]}
    pairs = [(lang, by_record[rid]) for table in _documents(first_run["stages"]["extract"])
             for rid, lang in zip(table.column("warc_record_id").to_pylist(), table.column("lang").to_pylist())
             if rid in by_record]
    assert len(pairs) > 50
    assert sum(found == wanted for found, wanted in pairs) / len(pairs) >= 0.9


def test_mlflow_run_has_the_stage_stats(first_run):
    mlflow.set_tracking_uri(first_run["mlflow_tracking_uri"])
    run = mlflow.get_run(first_run["mlflow_run_id"])
    stats = first_run["stages"]["extract"]["stats"]
    assert run.data.metrics["extract.documents_out"] == stats["documents_out"]
    assert run.data.metrics["extract.drop.non_html"] == stats["drops"]["non_html"]
    assert run.data.tags["sluice.extract.fingerprint"] == first_run["stages"]["extract"]["fingerprint"]
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "stages/extract")}
    assert {"stages/extract/stats.json", "stages/extract/manifest.json", "stages/extract/shards.json"} <= artifacts


def test_each_computed_stage_reports_its_orchestration_share(first_run):
    """(wall - task seconds / worker threads) / wall, in the stats, the MLflow metrics and the stage report; and the
    overhead beyond the longest call, (wall - max(task seconds / threads, longest call)) / wall."""
    mlflow.set_tracking_uri(first_run["mlflow_tracking_uri"])
    run = mlflow.get_run(first_run["mlflow_run_id"])
    for name, stage in first_run["stages"].items():
        stats = stage["stats"]
        assert stats["task_slots"] == 2, name                      # the recipe's 2 single-thread workers
        wall, work = stats["wall_seconds"], stats["call_seconds"] / 2   # every call's seconds, on its worker
        expected = max(0.0, (wall - work) / wall)
        assert stats["orchestration_share"] == pytest.approx(expected, abs=1e-4), name   # the share, to 4 places
        assert run.data.metrics[f"{name}.orchestration_share"] == stats["orchestration_share"]
        assert 0 < stats["longest_call_seconds"] <= stats["call_seconds"], name
        beyond = max(0.0, (wall - max(work, stats["longest_call_seconds"])) / wall)
        assert stats["overhead_share"] == pytest.approx(beyond, abs=1e-4), name
        assert stats["overhead_share"] <= stats["orchestration_share"], name
    report = mlflow.MlflowClient().download_artifacts(run.info.run_id, "stages/dedup/report.md")
    assert "label propagation" in Path(report).read_text()


def test_dedup_removes_the_labelled_duplicates(first_run, recipe, small_corpus):
    from dev.corpus.dedup_score import score

    extract, dedup = first_run["stages"]["extract"], first_run["stages"]["dedup"]
    stats = dedup["stats"]
    assert stats["candidates"] == extract["stats"]["documents_out"]
    assert stats["candidates"] == stats["documents_out"] + sum(stats["drops"].values())
    kept = {doc_id for table in _documents(dedup) for doc_id in table.column("id").to_pylist()}
    documents = [(record_id, doc_id in kept) for table in _documents(extract)
                 for doc_id, record_id in zip(table.column("id").to_pylist(),
                                              table.column("warc_record_id").to_pylist())]
    result = score(str(small_corpus / "labels.jsonl"), documents)
    assert result["precision"] >= 0.95 and result["recall"] >= 0.9 and result["recall_exact"] == 1.0
    removed = [read_documents(str(path)) for path in sorted((Path(dedup["manifest"]).parent / "removed").glob("*"))]
    assert sum(table.num_rows for table in removed) == sum(stats["drops"].values())  # every drop is listed
    assert not (Path(dedup["manifest"]).parent / "work").exists()
    shuffles = ("keys", "urls", "docs", "bands")       # the features' shuffles alone: one file per shard and bucket
    figures = DedupFigures.of(dedup)
    assert figures.work_files > len(shuffles) * len(_documents(extract)) * recipe.dedup.buckets
    assert figures.work_bytes > 100 * figures.work_files      # a parquet file is ~1 kB at least

    mlflow.set_tracking_uri(first_run["mlflow_tracking_uri"])
    run = mlflow.get_run(first_run["mlflow_run_id"])
    assert run.data.tags["sluice.dedup.fingerprint"] == dedup["fingerprint"]
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "stages/dedup")}
    assert {"stages/dedup/s_curve.png", "stages/dedup/cluster_sizes.png", "stages/dedup/report.md"} <= artifacts


def test_the_kept_documents_become_token_shards(first_run):
    from storage.token_shard import TokenShard
    from training.sequences import TokenSequences

    kept, tokenize = first_run["stages"]["quality_filter"], first_run["stages"]["tokenize"]
    assert TokenizerFigures.of(first_run["stages"]["tokenizer"]).vocab_size == 4000
    stage_dir = Path(tokenize["manifest"]).parent
    bases = [str(stage_dir / entry["path"]) for entry in json.loads(Path(tokenize["manifest"]).read_text())["shards"]]
    shards = [TokenShard(base) for base in bases]
    assert sum(len(shard) for shard in shards) == kept["stats"]["documents_out"] == tokenize["stats"]["documents_out"]
    assert sum(shard.num_tokens for shard in shards) == tokenize["stats"]["notes"]["tokens"]
    inputs, targets = TokenSequences(bases, seq_len=128, seed=0).next_batch(4)
    assert inputs.shape == (4, 128) and (inputs[:, 1:] == targets[:, :-1]).all()


def test_the_mixture_meets_its_weights_and_feeds_the_reader(first_run):
    from training.sequences import TokenSequences

    mixture = first_run["stages"]["mixture"]
    figures = MixtureFigures.of(mixture)                                        # recorded in the manifest
    assert figures.max_abs_weight_error < 0.01                                  # within 1% of the weights
    assert figures.work_files > 0 and figures.work_bytes > 0
    sources = figures.sources
    assert {row["source"] for row in sources} == {"english", "german"} and all(row["epochs"] > 0 for row in sources)
    stage_dir = Path(mixture["manifest"]).parent
    entries = json.loads(Path(mixture["manifest"]).read_text())["shards"]
    train = [str(stage_dir / e["path"]).removesuffix(".bin") for e in entries if e["path"].startswith("train.")]
    validation = [e for e in entries if e["path"].startswith("validation.")]
    assert train and validation
    inputs, _ = TokenSequences(train, seq_len=256, seed=0).next_batch(2)
    assert inputs.shape == (2, 256)


def test_the_demo_ends_with_a_short_fsdp_training_run_tracked_in_mlflow(first_run):
    from mlflow.tracking import MlflowClient

    training = first_run["training"]
    client = MlflowClient(first_run["mlflow_tracking_uri"])
    run = client.get_run(training["mlflow_run_id"])
    first_loss = min(client.get_metric_history(run.info.run_id, "loss"), key=lambda metric: metric.step).value
    # an untrained model's validation loss is its first-step loss (about ln(4000) = 8.29): this one learned
    assert training["step"] == 20 and training["val_loss"] < first_loss - 0.5, (first_loss, training["val_loss"])
    assert run.info.status == "FINISHED"
    tags = run.data.tags
    assert tags["sluice.curation_run"] == first_run["mlflow_run_id"]
    assert tags["sluice.mixture_digest"] == first_run["stages"]["mixture"]["digest"]
    assert client.get_run(first_run["mlflow_run_id"]).data.tags["sluice.training_run"] == run.info.run_id
    assert run.data.params["model.vocab_size"] == "4000"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"model_config.json", "samples", "checkpoint"} <= artifacts
    assert len(client.get_metric_history(run.info.run_id, "loss")) == 20


def test_the_trained_model_is_logged_with_its_training_data(first_run):
    import mlflow

    training = first_run["training"]
    run = mlflow.MlflowClient(first_run["mlflow_tracking_uri"]).get_run(training["mlflow_run_id"])
    (dataset,) = run.inputs.dataset_inputs
    assert dataset.dataset.name == f"mixture-{first_run['stages']['mixture']['fingerprint']}"
    assert [tag.value for tag in dataset.tags if tag.key == "mlflow.data.context"] == ["training"]
    (output,) = run.outputs.model_outputs
    assert training["model_uri"] == f"models:/{output.model_id}" and output.step == 20
    model = mlflow.get_logged_model(output.model_id)
    assert model.source_run_id == run.info.run_id and model.tags["sluice.mixture_digest"] == \
        first_run["stages"]["mixture"]["digest"]


def test_a_finished_training_is_not_launched_again_unless_its_config_or_run_changed(first_run):
    """Rerun with the same config, the training flow answers from the checkpoints and MLflow: no torchrun (a
    launch would log a `resumed_at` metric and the checkpoint again). Trained on, another config, or its MLflow run
    not finished here: launched."""
    import mlflow

    from configs.training import load_training_config
    from flows.training_flow import _finished_here, _record_finished, training_flow

    training = first_run["training"]
    config = load_training_config(Path(training["checkpoint_dir"]) / "train.yaml")
    client = mlflow.MlflowClient(first_run["mlflow_tracking_uri"])
    again = training_flow(config)
    assert again["mlflow_run_id"] == training["mlflow_run_id"] and again["step"] == 20
    assert again["val_loss"] == training["val_loss"] and again["model_uri"] == training["model_uri"]
    assert client.get_metric_history(training["mlflow_run_id"], "resumed_at") == []

    assert _finished_here(config)
    other = config.model_copy(update={"seed": config.seed + 1})
    assert _finished_here(other) is None and _finished_here(config) is None      # the record is gone: relaunch
    _record_finished(config)                                                       # as that launch would
    assert _finished_here(config)
    client.set_terminated(training["mlflow_run_id"], "FAILED")
    try:
        assert _finished_here(config) is None
    finally:
        client.set_terminated(training["mlflow_run_id"], "FINISHED")


def test_quality_scores_every_family_and_a_threshold_change_reruns_only_the_filter(first_run, recipe):
    from flows.curation import curation_flow

    stages = first_run["stages"]
    models = QualityModelsFigures.of(stages["quality_models"])
    assert models.kenlm_languages == ["en"] and models.classifier["heldout"]["auc"] > 0.7
    scores = stages["quality_scores"]
    assert scores["stats"]["documents_out"] == stages["dedup"]["stats"]["documents_out"]
    assert scores["stats"]["notes"]["no_perplexity_model_de"] > 0      # counted, not a crash
    table = read_documents(str(Path(scores["manifest"]).parent / json.loads(
        Path(scores["manifest"]).read_text())["shards"][0]["path"])).to_pylist()
    english = [row for row in table if row["lang"] == "en"]
    assert english and all(row["kenlm_ppl"] > 1 and 0 <= row["hq_prob"] <= 1 for row in english)
    kept = stages["quality_filter"]
    families = {reason.split("/")[0] for reason in kept["stats"]["drops"]}
    assert {"gopher_quality", "kenlm"} <= families
    funnel = QualityFilterFigures.of(kept).funnel
    assert funnel[0]["documents"] == scores["stats"]["documents_out"] and funnel[-1]["documents"] == \
        kept["stats"]["documents_out"]
    assert any(Path(kept["manifest"]).parent.glob("report/quality_histograms.png"))

    stricter = _untrained(recipe).model_copy(deep=True)
    stricter.quality.filter.gopher_quality.min_doc_words = 200
    swept = curation_flow(stricter)["stages"]
    assert swept["quality_models"]["cached"] and swept["quality_scores"]["cached"]
    assert not swept["quality_filter"]["cached"]
    assert swept["quality_filter"]["stats"]["documents_out"] < kept["stats"]["documents_out"]


def test_rerun_is_cached_and_a_killed_run_resumes_shard_by_shard(first_run, recipe):
    from flows.curation import curation_flow

    stages = curation_flow(_untrained(recipe))["stages"]
    again = stages["extract"]
    assert again["cached"] and again["digest"] == first_run["stages"]["extract"]["digest"]
    for name in ("dedup", "quality_models", "quality_scores", "quality_filter", "tokenizer", "tokenize", "mixture"):
        assert stages[name]["cached"] and stages[name]["digest"] == first_run["stages"][name]["digest"]

    # Simulate a run killed after two of four shards: manifest and two shards' files are gone.
    stage_dir = Path(again["manifest"]).parent
    os.remove(again["manifest"])
    lost = sorted((stage_dir / "shards").glob("*.parquet"))[:2]
    for shard in lost:
        os.remove(shard)
        os.remove(f"{shard}.stats.json")
    resumed_stages = curation_flow(_untrained(recipe))["stages"]
    resumed = resumed_stages["extract"]
    assert not resumed["cached"]
    assert resumed_stages["dedup"]["cached"]  # same extraction output: dedup's input identity is unchanged
    assert resumed["digest"] == first_run["stages"]["extract"]["digest"]  # same shards, byte for byte
    shards = json.loads(Path(resumed["manifest"]).read_text())["shards"]
    assert len(shards) == 4


def test_a_killed_worker_costs_a_retry_not_the_run(first_run, recipe, tmp_path):
    """SIGKILL a Dask worker while it runs an extraction shard, and another once dedup's label propagation has
    begun (its calls run as plain Dask tasks under the clusters task): Dask reschedules what they held and the
    run completes with the same documents as the undisturbed run. The stages after dedup are off: nothing is
    killed in them, and with dedup's output byte for byte the same they would read the same input."""
    import signal
    import threading
    import time

    from distributed import Client

    from configs.schema import DaskConfig, parse_recipe
    from flows.curation import curation_flow
    from flows.dask_cluster import dask_cluster

    killed = []
    store = tmp_path / "store"

    def kill_a_busy_worker(client: Client, when=lambda: True) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            busy = [worker for worker, tasks in client.processing().items() if tasks]
            if busy and when():
                pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(busy[0])
                return
            time.sleep(0.02)

    def clustering_started() -> bool:  # the first round of label propagation is written
        return any(store.glob("dedup/*/work/components/labels/r00000/*.parquet"))

    def kill_twice(client: Client) -> None:
        kill_a_busy_worker(client)
        kill_a_busy_worker(client, clustering_started)

    with dask_cluster(DaskConfig(n_workers=2)) as cluster, Client(cluster.address) as client:
        threading.Thread(target=kill_twice, args=(client,), daemon=True).start()
        raw = _untrained(recipe).model_dump() | {"store": str(store), "dask": {"address": cluster.address}}
        for section in ("quality", "domains", "tokenizer", "mixture"):
            raw[section]["enabled"] = False
        stages = curation_flow(parse_recipe(raw))["stages"]
    assert len(killed) == 2, "no worker was busy long enough to be killed in each stage"
    assert stages["extract"]["stats"]["documents_out"] == first_run["stages"]["extract"]["stats"]["documents_out"]
    # Byte-identical output of both stages in a fresh store, with a worker lost in each.
    for name in ("extract", "dedup"):
        assert stages[name]["digest"] == first_run["stages"][name]["digest"]


def test_every_module_a_stage_calls_is_in_its_fingerprint(traced_run):
    """Everything a stage's own code runs in the flow process is in its fingerprinted closure, apart from the
    orchestration modules (storage.code_version.ORCHESTRATION) and what only they call: an output decision put in
    a module the fingerprint does not follow fails here (storage.code_version)."""
    from storage.code_version import code_closure, orchestrates

    _, trace = traced_run
    assert set(trace.roots) >= {"extract", "dedup", "quality_models", "quality_scores", "quality_filter",
                                "tokenizer", "tokenize", "mixture"}
    outside = {stage: sorted(trace.called_by_stage_code(stage, orchestrates) - set(code_closure(root).modules))
               for stage, root in trace.roots.items()}
    assert not any(outside.values()), outside


IN_PROCESS = """
import json, sys
from configs.schema import parse_recipe
from tasks.pipeline import DEDUP, EXTRACT, in_process, run_pipeline

recipe = parse_recipe(json.loads(sys.argv[1]))
stages = run_pipeline(recipe, in_process, (EXTRACT, DEDUP))
extract, dedup = stages["extract"], stages["dedup"]
print(json.dumps({"extract": extract["digest"], "dedup": dedup["digest"], "cached": dedup["cached"],
                  "loaded": [name for name in ("prefect", "distributed", "mlflow") if name in sys.modules]}))
"""


def test_a_stage_runs_without_prefect_to_the_same_output(first_run, recipe, tmp_path):
    """The pipeline's first stages run in one process (`tasks.pipeline.in_process`), with neither Prefect, Dask nor
    MLflow loaded: the same fingerprints and the same bytes as the Prefect + Dask run (the manifests' digests)."""
    raw = recipe.model_dump(mode="json") | {"store": str(tmp_path / "store")}
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, json.dumps(raw)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"extract": first_run["stages"]["extract"]["digest"],
                                                        "dedup": first_run["stages"]["dedup"]["digest"],
                                                        "cached": False, "loaded": []}


def test_the_token_stages_export_to_megatron(first_run, tmp_path):
    """`sluice export-megatron`: the tokenize stage's shards, read by megatron-core's own reader, hold the same
    documents as the shards the trainer reads (storage.megatron_shard)."""
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    from cli.main import main
    from storage.manifest import Manifest
    from storage.token_shard import TokenShard

    manifest = first_run["stages"]["tokenize"]["manifest"]
    assert main(["export-megatron", manifest, str(tmp_path)]) == 0
    shards = Manifest.load(manifest).shards
    assert shards
    for entry in shards:
        ours, theirs = TokenShard(f"{Path(manifest).parent}/{entry.path}"), IndexedDataset(str(tmp_path / entry.path))
        assert len(theirs) == len(ours) == entry.documents
        assert all(theirs[index].tolist() == ours.document(index).tolist() for index in range(len(ours)))


def test_sluice_why_follows_a_document_through_the_stages(first_run, capsys):
    """Every document dedup removed as a duplicate is in its cluster table beside the copy kept; `sluice why` answers
    for an exact and a near duplicate (naming the copy kept and the similarity to it), a document the quality filter
    dropped, and one kept to the end."""
    from cli.main import main
    from flows.document_fate import curation_run_fates
    from storage.parquet import read_table

    def rows(stage: str, folder: str) -> list[dict]:
        stage_dir = Path(first_run["stages"][stage]["manifest"]).parent
        return [row for path in sorted((stage_dir / folder).glob("*.parquet"))
                for row in read_table(str(path)).to_pylist()]

    removed = {row["id"]: row for row in rows("dedup", "removed")}
    members = rows("dedup", "clusters")
    duplicates = {doc for doc, row in removed.items() if row["reason"].endswith("_duplicate")}
    assert duplicates == {row["id"] for row in members if not row["kept"]}
    assert all(row["cluster"] in {kept["id"] for kept in members if kept["kept"]} for row in members
               if row["reason"] != "url_duplicate")

    mlflow.set_tracking_uri(first_run["mlflow_tracking_uri"])
    run_id = first_run["mlflow_run_id"]

    def fate(key: str) -> list:
        found_run, (document,) = curation_run_fates(key, run_id)
        assert found_run == run_id
        return document.stages

    for reason in ("exact_duplicate", "near_duplicate"):
        doc = min(doc for doc in duplicates if removed[doc]["reason"] == reason)
        *before, dedup = fate(doc)
        assert [stage.stage for stage in before] == ["extract"] and (dedup.kept, dedup.reason) == (False, reason)
        assert dedup.details["kept_id"] == removed[doc]["dup_cluster"] and dedup.details["kept_url"]
        similarity = dedup.details["similarity"]
        assert similarity == 1.0 if reason == "exact_duplicate" else 0 < similarity < 1
    dropped = rows("quality_filter", "removed")[0]
    stages = fate(dropped["id"])
    assert [(stage.stage, stage.kept) for stage in stages] == [("extract", True), ("dedup", True),
                                                              ("quality_filter", False)]
    assert stages[-1].reason == dropped["reason"] and stages[-1].details["family"] == dropped["family"]
    final = rows("quality_filter", "shards")[0]["id"]
    assert all(stage.kept for stage in fate(final)) and len(fate(final)) == 3

    near = min(doc for doc in duplicates if removed[doc]["reason"] == "near_duplicate")
    capsys.readouterr()
    assert main(["why", removed[near]["url"], "--run", run_id]) == 0
    printed = capsys.readouterr().out
    assert "dedup: dropped (near_duplicate): the copy kept is " + removed[near]["dup_cluster"] in printed
    assert main(["why", "https://nowhere.example/never", "--run", run_id]) == 1
    assert "no extracted document" in capsys.readouterr().out
