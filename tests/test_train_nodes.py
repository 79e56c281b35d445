"""Training across nodes through the Dask cluster, for real: two LocalCluster workers on loopback, each offering
the `trainer` resource, are two "nodes" of one rank each (torchrun --nnodes 2, gloo, FSDP2)."""
from __future__ import annotations

import glob
import json
import os
import signal
import threading
import time

import mlflow
import psutil
import pytest
import yaml

from test_train import _config, _edit                   # pytest puts tests/ on the path
from torchrun_training import training_records
from tracking.mlflow_writer import RUN_RECORD
from training_drills import drill_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trainer_cluster():
    import dask
    from distributed import Client, LocalCluster

    from flows.dask_cluster import HOUSEKEEPING_CONFIG, WORKER_CONFIG

    with dask.config.set(WORKER_CONFIG | HOUSEKEEPING_CONFIG), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", host="127.0.0.1",
                         resources={"trainer": 1}) as cluster, Client(cluster) as client:
        yield cluster.scheduler_address, client


def _on_nodes(config_path: str, address: str):
    from configs.training import TrainingConfig

    raw = yaml.safe_load(open(config_path))
    raw["hardware"] |= {"nodes": 2, "dask_address": address}
    return TrainingConfig.model_validate(raw)


def _records(checkpoint_dir: str) -> list[dict]:
    with open(os.path.join(checkpoint_dir, "node-0.log")) as handle:
        return [json.loads(line) for line in handle if line.startswith("{")]


def test_two_nodes_of_one_rank_train_like_one_node_with_two_ranks(byte_shards, tmp_path, trainer_cluster,
                                                                  monkeypatch):
    """...to the same losses at each of 4 steps (the one-node run without MLflow: its losses are all it gives
    here), and node 0's rank 0 sends its MLflow run to the flow, which writes it (a spy on the writer's real
    `apply`, in this process, which runs the flow)."""
    import tracking.mlflow_writer as mlflow_writer
    from flows.training_flow import training_flow

    address, _ = trainer_cluster
    one_node = _edit(_config(tmp_path, byte_shards, "one-node"), steps=4, mlflow__enabled=False)
    one_node = [r for r in training_records(one_node, 2) if "loss" in r]
    written_here, apply = [], mlflow_writer.apply
    monkeypatch.setattr(mlflow_writer, "apply", lambda lines: written_here.append(True) or apply(lines))
    config = _on_nodes(_edit(_config(tmp_path, byte_shards, "two-nodes"), steps=4), address)
    result = training_flow(config)
    assert written_here, "rank 0 wrote its MLflow run itself"
    two_nodes = {r["step"]: r["loss"] for r in _records(config.checkpoint.dir) if "loss" in r}
    assert sorted(two_nodes) == [r["step"] for r in one_node] == list(range(1, 5))
    for record in one_node:
        assert two_nodes[record["step"]] == pytest.approx(record["loss"], abs=1e-6), record["step"]
    assert result["loss"] == pytest.approx(one_node[-1]["loss"], abs=1e-6)
    assert os.path.exists(os.path.join(config.checkpoint.dir, "node-1.log"))


def test_a_lost_node_fails_the_run_naming_it_and_a_rerun_resumes(byte_shards, tmp_path, trainer_cluster):
    """Node 1's machine dies (its worker and its torchrun, killed) after a checkpoint: the run fails naming node 1,
    node 0's trainer is stopped, and a rerun on the restarted worker resumes from the checkpoint. Node 1's rank
    stalls before step 3 (a drill in its worker's environment, which its torchrun inherits), so the first attempt
    is still at step 3 when the node dies, whenever that is: a run of 4 steps, checkpointed at 2 and 4."""
    from flows.training_flow import training_flow
    from flows.training_nodes import cluster_workers

    address, client = trainer_cluster
    config = _on_nodes(_edit(_config(tmp_path, byte_shards, "lost"), steps=4, checkpoint__every=2), address)

    def environ(variables: dict[str, str | None]) -> None:      # on a worker: what the torchruns it starts inherit
        for variable, value in variables.items():
            os.environ.pop(variable, None) if value is None else os.environ.__setitem__(variable, value)

    stall = drill_env(slow_rank=1, slow_seconds=600, slow_steps=[3])
    client.run(environ, stall)                  # (a nested function: sent by value, not imported from this module)
    try:
        _lose_node_1(config, client, training_flow, cluster_workers)
    finally:                    # the restarted worker starts without the drill; the other one forgets it
        client.run(environ, dict.fromkeys(stall))
    resumed = training_flow(config)
    assert resumed["step"] == 4 and resumed["mlflow_run_id"] == _run_id(config)
    assert mlflow.MlflowClient().get_run(resumed["mlflow_run_id"]).info.status == "FINISHED"
    assert [r["event"] for r in _records(config.checkpoint.dir) if r.get("event") == "resumed"] == ["resumed"]


def _run_id(config) -> str:
    with open(f"{config.checkpoint.dir}/{RUN_RECORD}") as handle:
        return json.load(handle)["run_id"]


def _lose_node_1(config, client, training_flow, cluster_workers) -> None:
    """The first attempt, and node 1 lost after its first checkpoint: the run fails naming node 1, no trainer is
    left, its MLflow run FAILED; both workers are back."""
    failure: list[BaseException] = []

    def first_attempt():
        try:
            training_flow.with_options(retries=0)(config)
        except BaseException as error:          # noqa: BLE001 - the test reads it
            failure.append(error)

    attempt = threading.Thread(target=first_attempt)
    attempt.start()
    deadline = time.monotonic() + 240
    while not glob.glob(f"{config.checkpoint.dir}/step-*/complete"):
        assert attempt.is_alive() and time.monotonic() < deadline, failure
        time.sleep(0.2)
    nodes = sorted(cluster_workers(client))
    node1 = psutil.Process(client.run(os.getpid, workers=[nodes[1]])[nodes[1]])
    for process in [*node1.children(recursive=True), node1]:        # the whole machine goes at once
        process.send_signal(signal.SIGKILL)
    attempt.join(timeout=120)
    assert not attempt.is_alive() and failure, "the run did not fail"
    assert f"node 1 ({nodes[1]})" in str(failure[0]), failure[0]
    assert not _trainers_left(config.checkpoint.dir), "a trainer was left running"
    assert [r["step"] for r in _records(config.checkpoint.dir) if "loss" in r] == [1, 2]     # lost in step 3
    assert mlflow.MlflowClient().get_run(_run_id(config)).info.status == "FAILED"     # not RUNNING for ever
    client.wait_for_workers(2, timeout=120)       # the nanny restarts the lost worker, with its resource


def _trainers_left(checkpoint_dir: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if "training.train" in " ".join(p.info["cmdline"] or [])
            and checkpoint_dir in " ".join(p.info["cmdline"] or [])]


def test_a_training_on_nodes_past_its_timeout_fails_saying_so_and_stops_every_node(byte_shards, tmp_path,
                                                                                   trainer_cluster):
    """The timer stops every node's torchrun; the error names the timeout (not the nodes' exit codes), no trainer
    is left on either node, and the MLflow run rank 0 started is FAILED."""
    from configs.training import TrainingConfig
    from flows.training_flow import training_flow

    address, _ = trainer_cluster
    on_nodes = _on_nodes(_edit(_config(tmp_path, byte_shards, "nodes-slow"), steps=100_000), address)
    config = TrainingConfig.model_validate(on_nodes.model_dump() | {"timeout_s": 20})
    with pytest.raises(RuntimeError, match=r"stopped on every node after timeout_s = 20 s; a rerun resumes"):
        training_flow.with_options(retries=0)(config)
    assert not _trainers_left(config.checkpoint.dir), "a trainer was left running"
    assert [r for r in _records(config.checkpoint.dir) if "loss" in r], "the nodes had not started training"
    with open(f"{config.checkpoint.dir}/{RUN_RECORD}") as handle:
        run_id = json.load(handle)["run_id"]
    assert mlflow.MlflowClient().get_run(run_id).info.status == "FAILED"


def test_a_rendezvous_at_a_public_address_is_refused_with_the_reason():
    from flows.training_nodes import public_rendezvous

    for private in ("127.0.0.1", "10.0.0.5", "172.16.3.4", "192.168.1.9", "::1"):
        assert public_rendezvous(private) is None, private
    problem = public_rendezvous("8.8.8.8")
    assert "node 0 (8.8.8.8) is at the public address 8.8.8.8" in problem and "trusted private network" in problem


def test_nodes_split_the_ranks_evenly_and_need_a_scheduler_with_trainer_workers(monkeypatch, trainer_cluster):
    from configs.training import HardwareSpec, TrainingConfig
    from flows.training_nodes import dask_address, trainer_workers

    with pytest.raises(ValueError, match=r"data_parallel \(3\) must be a multiple of hardware.nodes \(2\)"):
        HardwareSpec(data_parallel=3, nodes=2)
    monkeypatch.delenv("SLUICE_DASK_ADDRESS", raising=False)
    config = TrainingConfig.model_validate({"hardware": {"data_parallel": 2, "nodes": 2}})
    with pytest.raises(ValueError, match=r"needs a Dask scheduler .* \$SLUICE_DASK_ADDRESS"):
        dask_address(config)
    address, client = trainer_cluster
    assert len(trainer_workers(client, 2)) == 2
    with pytest.raises(RuntimeError, match=r"3 nodes asked, but 2 of the 2 Dask workers offer the `trainer` resource"):
        trainer_workers(client, 3)
