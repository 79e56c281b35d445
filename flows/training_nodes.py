"""A training run across nodes through the Dask cluster: one torchrun per node, each started by a Dask task on a
worker that offers the `trainer` resource (`dask worker --resources trainer=1`; `sluice server` gives each of its
workers one).

- Rendezvous: torchrun gets `--nnodes N --node-rank R` and meets at the first node's host, on a port that node
  found free (torchrun's c10d TCP store listens there). Ranks are node-major, as on one machine. The store takes
  any connection (torchrun trusts its network), so a node 0 at a public address is refused before anything starts.
- Output: each node writes `node-<R>.log` beside the checkpoints, which every node must see (a rerun resumes
  from them); the flow follows node 0's log as it grows. Rank 0 sends its MLflow run to a writer in the flow
  process, listening on the flow machine's address towards the scheduler (`tracking.mlflow_writer.HostedWriter`),
  over TLS with the cluster's certificates when the scheduler is tls://.
- Stopping: each node task holds its torchrun in a process group of its own and kills the group when the run's
  stop event (a Dask `Event`) is set: on cancel or crash (the flow's hooks), on timeout, or after another node
  failed.
- Failures: a node whose torchrun fails, or whose worker leaves the cluster, fails the run with the node
  named; a rerun resumes from the last complete checkpoint, as on one machine.
"""
from __future__ import annotations

import ipaddress
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import urlparse

from configs.training import TrainingConfig
from flows.dask_tls import tls_files
from flows.processes import free_port
from flows.torchrun import follow_records, kill_group, start_trainer, torchrun_command
from tracking.mlflow_writer import TLS_SCHEME, WRITER_ENV, WRITER_TLS_ENV, HostedWriter

TRAINER_RESOURCE = "trainer"
DASK_ADDRESS_ENV = "SLUICE_DASK_ADDRESS"
SETTLE_S = 5.0       # after a first failure, how long the others have to show theirs before the run fails


def node_log(checkpoint_dir: str, rank: int) -> str:
    return os.path.join(checkpoint_dir, f"node-{rank}.log")


def stop_event_name(flow_run_id: str) -> str:
    return f"sluice-train-stop-{flow_run_id}"


def set_stop(address: str, event: str) -> None:
    """Sets a run's stop event from any process (the cancel and crash hooks): every node kills its torchrun."""
    from distributed import Client, Event

    with Client(address, timeout=30) as client:
        Event(event, client=client).set()


def dask_address(config: TrainingConfig) -> str:
    address = config.hardware.dask_address or os.environ.get(DASK_ADDRESS_ENV)
    if not address:
        raise ValueError(f"hardware.nodes = {config.hardware.nodes} needs a Dask scheduler whose workers are the "
                         f"nodes: set hardware.dask_address or ${DASK_ADDRESS_ENV} (`sluice server` sets it)")
    return address


def cluster_workers(client) -> dict[str, dict]:
    """Every worker the scheduler knows, by address, asked of the scheduler now. Not `client.scheduler_info()`:
    it returns the client's cached identity, which its periodic refresh overwrites with one that lists no worker,
    and a poll that met that refresh read every node as gone ("node 0 ... left the Dask cluster; node 1 ..." at
    the end of a healthy training, 1 run in ~20)."""
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def trainer_workers(client, nodes: int) -> list[str]:
    """The first `nodes` workers (by address) that offer the trainer resource; node 0 hosts the rendezvous."""
    workers = cluster_workers(client)
    offering = sorted(address for address, worker in workers.items()
                      if worker.get("resources", {}).get(TRAINER_RESOURCE, 0) >= 1)
    if len(offering) < nodes:
        raise RuntimeError(f"{nodes} nodes asked, but {len(offering)} of the {len(workers)} Dask workers offer the "
                           f"`{TRAINER_RESOURCE}` resource (start them with `dask worker --resources "
                           f"{TRAINER_RESOURCE}=1`)")
    return offering[:nodes]


def public_rendezvous(host: str) -> str | None:
    """Why node 0's address cannot host torchrun's rendezvous (None if it can): its store listens without
    credentials, as torchrun's docs say, for a trusted private network only. A name is judged by every address it
    resolves to."""
    try:
        addresses = {info[4][0].split("%")[0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        return None              # what cannot be resolved here is not an address the nodes reach on the internet
    public = sorted(address for address in addresses if ipaddress.ip_address(address).is_global)
    if not public:
        return None
    return (f"node 0 ({host}) is at the public address {', '.join(public)}: torchrun's rendezvous store there takes "
            f"any connection, without credentials or encryption (torchrun expects a trusted private network). Run the "
            f"training nodes' Dask workers on a private network (10/8, 172.16/12, 192.168/16, a VPN): "
            f"`dask worker ... --host PRIVATE_ADDRESS`")


def run_node(command: list[str], log_path: str, stop_event: str, env: dict[str, str]) -> int:
    """On the node's Dask worker: torchrun until it exits or the run's stop event is set; its exit code."""
    from distributed import Event

    stop = Event(stop_event)
    if env.get(WRITER_ENV, "").startswith(TLS_SCHEME):      # rank 0 shows this node's certificate to the writer
        env = env | {WRITER_TLS_ENV: json.dumps(tls_files("worker"))}
    with open(log_path, "w") as log:
        process = start_trainer(command, log, env)
        try:
            while process.poll() is None and not stop.wait(timeout=1):
                pass
        finally:
            kill_group(process)
    return process.returncode


class NodeWatch:
    """Which nodes failed (torchrun exited non-zero, the task erred, the worker left), and when to stop waiting."""

    def __init__(self, client, futures: list, workers: list[str], stop):
        self.client, self.futures, self.workers, self.stop = client, futures, workers, stop
        self.failed: dict[int, str] = {}
        self.lost: set[int] = set()         # nodes whose worker left: their task never returns
        self.first_failure: float | None = None

    def finished(self) -> bool:
        present = set(cluster_workers(self.client))
        for rank, (future, worker) in enumerate(zip(self.futures, self.workers)):
            if rank in self.failed:
                continue
            if future.done():
                if future.status != "finished":
                    self.failed[rank] = f"node {rank} ({worker}) failed: {future.exception()!r}"
                elif future.result() != 0:
                    self.failed[rank] = f"node {rank} ({worker}): torchrun exited with {future.result()}"
            elif worker not in present:
                self.failed[rank] = f"node {rank} ({worker}) left the Dask cluster"
                self.lost.add(rank)
        if self.failed and self.first_failure is None:
            self.first_failure = time.monotonic()
            self.stop.set()
        settled = self.first_failure is not None and time.monotonic() - self.first_failure > SETTLE_S
        return all(future.done() for future in self.returning()) or settled

    def returning(self) -> list:
        """The node tasks that will return: those of the nodes still in the cluster."""
        return [future for rank, future in enumerate(self.futures) if rank not in self.lost]


def follow_file(path: str, finished: Callable[[], bool], poll_s: float = 0.5) -> Iterator[str]:
    """The lines written to `path` (once it exists) until `finished()` and every line is read."""
    position, partial = 0, ""
    while True:
        done = finished()
        if os.path.exists(path):
            with open(path) as handle:
                handle.seek(position)
                chunk = handle.read()
                position = handle.tell()
            *lines, partial = (partial + chunk).split("\n")
            yield from (line + "\n" for line in lines)
        if done:
            if partial:
                yield partial
            return
        time.sleep(poll_s)


def _wait_quietly(futures: list, timeout_s: float) -> None:
    """Until every node task has returned (one that does not, e.g. of a node that left unseen, is given up after
    `timeout_s`)."""
    from distributed import wait

    try:
        wait(futures, timeout=timeout_s)
    except TimeoutError:
        pass


def train_on_nodes(config: TrainingConfig, config_path: str, flow_run_id: str, log: Callable[[str], None]) -> dict:
    """Runs the trainer on `config.hardware.nodes` Dask workers; returns node 0's last record fields."""
    from distributed import Client, Event
    from distributed.comm import get_address_host
    from distributed.utils import get_ip

    hardware, checkpoint_dir = config.hardware, config.checkpoint.dir
    stop_name = stop_event_name(flow_run_id)
    address = dask_address(config)
    # the nodes reach this machine the way it reaches the scheduler (loopback when the cluster is local), over TLS
    # when the scheduler is
    writer = HostedWriter(get_ip(get_address_host(address)),
                          tls_files("client") if address.startswith("tls://") else None)
    with writer, Client(address, timeout=60) as client:
        workers = trainer_workers(client, hardware.nodes)
        if problem := public_rendezvous(urlparse(workers[0]).hostname):
            raise RuntimeError(problem)
        master = (urlparse(workers[0]).hostname, client.run(free_port, workers=[workers[0]])[workers[0]])
        log(f"training on {hardware.nodes} nodes of {hardware.ranks // hardware.nodes} ranks: {workers}; "
            f"rendezvous at {master[0]}:{master[1]}")
        logs = [node_log(checkpoint_dir, rank) for rank in range(hardware.nodes)]
        for path in logs:             # an earlier attempt's log must not be followed as this one's
            if os.path.exists(path):
                os.remove(path)
        stop = Event(stop_name, client=client)
        stop.clear()
        attempt = uuid.uuid4().hex[:8]
        futures = [client.submit(run_node, torchrun_command(config_path, hardware.ranks // hardware.nodes,
                                                            hardware.nodes, rank, master),
                                 logs[rank], stop_name, {WRITER_ENV: writer.address}, workers=[worker],
                                 allow_other_workers=False,
                                 resources={TRAINER_RESOURCE: 1}, pure=False,
                                 key=f"sluice-train-node-{rank}-{attempt}")
                   for rank, worker in enumerate(workers)]
        watch = NodeWatch(client, futures, workers, stop)
        timed_out = threading.Event()

        def time_out() -> None:
            timed_out.set()
            stop.set()

        timer = threading.Timer(config.timeout_s, time_out) if config.timeout_s else None
        try:
            if timer:
                timer.start()
            last = follow_records(follow_file(logs[0], watch.finished), log)
        finally:
            if timer:
                timer.cancel()
            stop.set()                # every node's torchrun is gone before this returns or raises
            _wait_quietly(watch.returning(), timeout_s=20)
    if timed_out.is_set() and watch.failed:       # a timer firing as the training ended stopped no node
        raise RuntimeError(f"the training was stopped on every node after timeout_s = {config.timeout_s:g} s; a rerun "
                           f"resumes from the latest checkpoint in {checkpoint_dir}")
    if watch.failed:
        raise RuntimeError("; ".join(watch.failed[rank] for rank in sorted(watch.failed))
                           + f" (see node-<rank>.log); a rerun resumes from the latest checkpoint in {checkpoint_dir}")
    return last
