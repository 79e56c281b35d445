"""Rank 0's MLflow logging through the writer a launching flow hosts: the rank sends, never imports MLflow, and the
run in MLflow is what it sent, continued on resume; a connection without the writer's token is dropped; a writer
that fails stops the trainer and fails the flow, and one out of reach is named; across the nodes of a TLS cluster
the writer speaks only TLS, to a certificate of the cluster's CA."""
from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import mlflow
import pytest

from configs.training import TrainingConfig
from tracking.mlflow_writer import RUN_RECORD, TLS_SCHEME, WRITER_ENV, WRITER_TLS_ENV, HostedWriter, tls_context
from tracking.run_logger import RunLogger

ROOT = Path(__file__).resolve().parents[1]

# rank 0's side, in a process of its own: what a launched trainer does with the logger
RANK_0 = """
import json, sys
from configs.training import TrainingConfig
from tracking.run_logger import RunLogger

logger = RunLogger(TrainingConfig.model_validate(json.loads(sys.argv[1])), enabled=True)
logger.params({"model.d_model": "16", "steps": "3"})
for step in range(1, 4):
    logger.metrics(step, {"loss": 5.0 - step, "lr": None})
logger.flush()
logger.text("hello", "notes/hello.txt")
logger.finish()
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in ("mlflow", "sqlalchemy"))))
"""


def _config(tmp_path: Path, **mlflow_settings) -> TrainingConfig:
    return TrainingConfig.model_validate({
        "name": "hosted", "data": {"train": ["unused"]}, "checkpoint": {"dir": str(tmp_path / "checkpoints")},
        "mlflow": {"experiment": "hosted-writer-test", "tags": {"sluice.data": "hosted"},
                   "system_metrics_interval_s": 1} | mlflow_settings})


def _rank_0(config: TrainingConfig, address: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run([sys.executable, "-c", RANK_0, json.dumps(config.model_dump(mode="json"))], cwd=ROOT,
                          env=os.environ | {WRITER_ENV: address} | (env or {}), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_rank_0_logs_through_the_flows_writer_without_importing_mlflow_and_a_resume_continues_the_run(tmp_path):
    config = _config(tmp_path)
    writer = HostedWriter()
    assert _rank_0(config, writer.address) == []           # neither mlflow nor its store's sqlalchemy
    writer.close()

    run_id = json.loads((tmp_path / "checkpoints" / RUN_RECORD).read_text())["run_id"]
    client = mlflow.MlflowClient()
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags["sluice.data"] == "hosted"
    assert run.data.params == {"model.d_model": "16", "steps": "3"}
    assert [(m.step, m.value) for m in client.get_metric_history(run_id, "loss")] == [(1, 4.0), (2, 3.0), (3, 2.0)]
    assert "lr" not in run.data.metrics
    assert any(key.startswith("system/cpu_utilization") for key in run.data.metrics)   # even a run this short
    assert open(client.download_artifacts(run_id, "notes/hello.txt")).read() == "hello"

    writer = HostedWriter()                          # the resumed training: the same run, its params not sent again
    _rank_0(config, writer.address)
    writer.close()
    assert json.loads((tmp_path / "checkpoints" / RUN_RECORD).read_text())["run_id"] == run_id
    assert len(client.get_metric_history(run_id, "loss")) == 6
    assert client.get_run(run_id).info.status == "FINISHED"


def test_a_connection_without_the_writers_token_is_dropped_and_the_trainer_is_served(tmp_path):
    """Another process on the network reaches the writer first, without its token: dropped, nothing of what it sent
    logged; the trainer's connection is then served."""
    config = _config(tmp_path, experiment="hosted-writer-token")
    writer = HostedWriter()
    host, port = writer.address.split("/")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as intruder:
        intruder.sendall(b"a guess\n" + json.dumps({"op": "start", "config": config.model_dump(mode="json")})
                         .encode() + b"\n")
        try:
            assert intruder.recv(1) == b""                  # the writer hung up
        except ConnectionResetError:
            pass
    _rank_0(config, writer.address)
    writer.close()
    experiment = mlflow.get_experiment_by_name("hosted-writer-token").experiment_id
    (run,) = mlflow.MlflowClient().search_runs([experiment])         # the trainer's, and only it
    assert run.info.status == "FINISHED" and run.data.params == {"model.d_model": "16", "steps": "3"}


def test_across_a_tls_cluster_the_writer_serves_only_tls_to_a_certificate_of_the_clusters_ca(tmp_path):
    """Rank 0 on another node of a TLS cluster: the writer speaks TLS only, so the records cannot be read off the
    network. A plain connection that shows the right token and a TLS one with another cluster's certificate are
    dropped, nothing of what they sent logged; rank 0 with its node's certificate is served."""
    from services.cluster_secrets import CA_CERT, NODE_CERT, NODE_KEY, make_cluster_secrets

    files = {}
    for cluster in ("ours", "foreign"):
        make_cluster_secrets(tmp_path / cluster)
        files[cluster] = {"ca_file": str(tmp_path / cluster / CA_CERT), "cert": str(tmp_path / cluster / NODE_CERT),
                          "key": str(tmp_path / cluster / NODE_KEY)}
    config = _config(tmp_path, experiment="hosted-writer-tls")
    writer = HostedWriter(tls_files=files["ours"])
    assert writer.address.startswith(TLS_SCHEME)
    where, token = writer.address.removeprefix(TLS_SCHEME).split("/", 1)
    host, port = where.rsplit(":", 1)
    start = f"{token}\n{json.dumps({'op': 'start', 'config': config.model_dump(mode='json')})}\n".encode()
    with socket.create_connection((host, int(port)), timeout=30) as plain:
        _refused(plain, start)
    # trusts our CA, shows the foreign cluster's certificate
    impostor = tls_context(files["foreign"] | {"ca_file": files["ours"]["ca_file"]}, server_side=False)
    with impostor.wrap_socket(socket.create_connection((host, int(port)), timeout=30)) as foreign:
        _refused(foreign, start)
    _rank_0(config, writer.address, {WRITER_TLS_ENV: json.dumps(files["ours"])})
    writer.close()
    experiment = mlflow.get_experiment_by_name("hosted-writer-tls").experiment_id
    (run,) = mlflow.MlflowClient().search_runs([experiment])         # rank 0's, and only it
    assert run.info.status == "FINISHED" and run.data.params == {"model.d_model": "16", "steps": "3"}


def _refused(connection: socket.socket, sent: bytes) -> None:
    """The writer hangs up on what `connection` sends (or fails its TLS handshake) without answering."""
    try:
        connection.sendall(sent)
        assert connection.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        pass


def test_a_writer_that_fails_stops_the_trainer_and_fails_the_flow(tmp_path, monkeypatch):
    writer = HostedWriter()
    monkeypatch.setenv(WRITER_ENV, writer.address)
    logger = RunLogger(_config(tmp_path, tracking_uri="no-such-store://anywhere"), enabled=True)
    writer.thread.join(timeout=60)                   # the writer could not open the store and hung up
    with pytest.raises(RuntimeError, match="the flow's MLflow writer went away"):
        for step in range(1000):
            logger.text("still training", f"step-{step}.txt")
    with pytest.raises(RuntimeError, match="logging the training run to MLflow failed") as raised:
        writer.close()
    assert "no-such-store" in str(raised.value.__cause__)


def test_a_trainer_that_cannot_reach_the_flows_writer_says_where_it_looked(tmp_path, monkeypatch):
    from flows.processes import free_port

    address = f"127.0.0.1:{free_port()}"                # nothing listens there
    monkeypatch.setenv(WRITER_ENV, f"{address}/token")
    with pytest.raises(RuntimeError, match=f"cannot reach the flow's MLflow writer at {address}"):
        RunLogger(_config(tmp_path), enabled=True)


def test_an_attempt_that_failed_before_its_params_gets_them_on_resume_and_the_monitor_stops_however_it_ends(
        tmp_path):
    from tracking.mlflow_writer import apply

    config = _config(tmp_path)
    start = json.dumps({"op": "start", "config": config.model_dump(mode="json")})
    before = _monitors()
    with pytest.raises(Exception):                       # the first attempt dies on an operation MLflow refuses
        apply([start + "\n", json.dumps({"op": "metrics", "rows": [["not a metric name!", 1.0, 0, 1]]}) + "\n"])
    assert _monitors() == before, "the system-metrics monitor outlived its writer"
    apply([start + "\n", '{"op": "metrics", "rows": [["lo'])       # rank 0 killed mid-line: not the writer's error
    assert _monitors() == before
    params = {"op": "params", "params": {"steps": "3", "model.d_model": "16"}}
    apply([line + "\n" for line in (start, json.dumps(params), json.dumps({"op": "finish", "status": "FINISHED"}))])
    run_id = json.loads((tmp_path / "checkpoints" / RUN_RECORD).read_text())["run_id"]
    assert mlflow.MlflowClient().get_run(run_id).data.params == {"steps": "3", "model.d_model": "16"}


def _monitors() -> int:
    return sum(thread.name == "SystemMetricsMonitor" and thread.is_alive() for thread in threading.enumerate())


def test_checkpoints_tracked_in_another_store_are_logged_again_here_with_their_figures(tmp_path, caplog):
    """A training folder whose MLflow run is in another store (the CLI's, then a server's) continues in a new run
    of this store, the old run's params, tags and metrics copied, and says so; the record then names this store."""
    from tracking.mlflow_writer import RunWriter

    elsewhere = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    first = RunWriter(_config(tmp_path, tracking_uri=elsewhere, system_metrics_interval_s=None))
    first.params({"model.d_model": "16"})
    first.metrics([["loss", 4.0 - step, 1000 + step, step] for step in range(1, 4)])
    first.finish("FINISHED")
    here = f"sqlite:///{tmp_path / 'here.db'}"
    again = RunWriter(_config(tmp_path, tracking_uri=here, system_metrics_interval_s=None))
    assert again.resumed and again.run_id != first.run_id
    assert "logged again here as run" in caplog.text and "its params, tags and metrics copied" in caplog.text
    copied = mlflow.MlflowClient(here)
    assert [point.value for point in copied.get_metric_history(again.run_id, "loss")] == [3.0, 2.0, 1.0]
    assert copied.get_run(again.run_id).data.params["model.d_model"] == "16"
    record = json.loads((Path(_config(tmp_path).checkpoint.dir) / RUN_RECORD).read_text())
    assert record == {"run_id": again.run_id, "tracking_uri": here}
    again.finish("FINISHED")
