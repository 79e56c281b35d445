"""A training run's MLflow writer: creates the run, or continues the one recorded beside the checkpoints (a
resumed training), starts MLflow's system-metrics monitor, and logs params, metrics (rows of key, value, timestamp
in ms, step; sent with `log_batch`: per-step `log_metric` calls are about 20x slower), texts and artifacts.

Rank 0 (`tracking.run_logger`) uses it in its own process, or, when the flow that launched torchrun hosts one
(`HostedWriter`), sends it each operation as a JSON line over a socket whose address it finds in `WRITER_ENV`
(loopback on one machine; the flow machine's address on the cluster's network for a run across nodes, over TLS
when the cluster's Dask is: both ends show a certificate of the cluster's CA, as Dask's own connections do). The flow
process has MLflow loaded already; rank 0 would spend ~4 s importing it and setting up its store while every other
rank waits for it at the first collective. An end of input without `finish` (rank 0 killed) leaves the run
RUNNING, to be continued by the resumed training; the training flow marks it FAILED if the attempt failed."""
from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import ssl
import threading
from collections.abc import Iterable, Iterator

from configs.training import TrainingConfig
from tracking.run_copy import copy_run

RUN_RECORD = "mlflow_run.json"
WRITER_ENV = "SLUICE_MLFLOW_WRITER"      # [tls://]host:port/token of a hosted writer, for rank 0
# over TLS: the files of the rank's node, {"ca_file", "cert", "key"} as JSON (the node's Dask worker sets it)
WRITER_TLS_ENV = "SLUICE_MLFLOW_WRITER_TLS"
TLS_SCHEME = "tls://"
TOKEN_WAIT_S = 10.0              # how long a connection has to show the writer's token
PARAMS_PER_BATCH = 100           # MLflow's log_batch limits
METRICS_PER_BATCH = 1000
logger = logging.getLogger(__name__)


class RunWriter:
    def __init__(self, config: TrainingConfig):
        from mlflow.tracking import MlflowClient

        from tracking.store import tracking_uri

        uri = tracking_uri(config.mlflow.tracking_uri)
        self.client = MlflowClient(uri)
        self.run_id, self.resumed = self._start_run(config, uri)
        self.system = None
        if config.mlflow.system_metrics_interval_s:
            from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

            self.system = SystemMetricsMonitor(self.run_id, sampling_interval=config.mlflow.system_metrics_interval_s,
                                               resume_logging=self.resumed, tracking_uri=uri)
            self.system.start()

    def _start_run(self, config: TrainingConfig, uri: str) -> tuple[str, bool]:
        """The run recorded beside the checkpoints, continued; else a new one. A recorded run this store lacks (the
        checkpoints were trained while tracking elsewhere) is logged again here, in a new run with the old one's
        params, tags and metrics when its store can still be read: never a failure."""
        record = os.path.join(config.checkpoint.dir, RUN_RECORD)
        if not os.path.exists(record):
            return self._new_run(config, uri, record), False
        with open(record) as handle:
            recorded = json.load(handle)
        if self._has_run(recorded["run_id"]):
            self.client.update_run(recorded["run_id"], status="RUNNING")
            return recorded["run_id"], True
        run_id = self._new_run(config, uri, record)
        copied = copy_run(recorded.get("tracking_uri"), recorded["run_id"], self.client, run_id)
        logger.warning("the checkpoints in %s were tracked as MLflow run %s in %s, which %s lacks: logged again "
                       "here as run %s (%s)", config.checkpoint.dir, recorded["run_id"],
                       recorded.get("tracking_uri", "another store"), uri, run_id,
                       "its params, tags and metrics copied" if copied else "that store cannot be read: from here on")
        return run_id, True

    def _has_run(self, run_id: str) -> bool:
        from mlflow.exceptions import MlflowException

        try:
            self.client.get_run(run_id)
        except MlflowException:
            return False
        return True

    def _new_run(self, config: TrainingConfig, uri: str, record: str) -> str:
        """A new run in the config's experiment, recorded beside the checkpoints with the store it is in."""
        from tracking.store import EXPERIMENT_TAGS, artifact_location

        experiment = self.client.get_experiment_by_name(config.mlflow.experiment)
        experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(
            config.mlflow.experiment, artifact_location=artifact_location(config.mlflow.experiment, uri),
            tags=EXPERIMENT_TAGS)
        tags = {"sluice.kind": "training", **config.mlflow.tags}
        run_id = self.client.create_run(experiment_id, run_name=config.name, tags=tags).info.run_id
        os.makedirs(config.checkpoint.dir, exist_ok=True)
        with open(record, "w") as handle:
            json.dump({"run_id": run_id, "tracking_uri": uri}, handle)
        return run_id

    def params(self, params: dict[str, str]) -> None:
        """Logged by the run that created the MLflow run; a resumed run logs those it lacks (an attempt that failed
        before logging them), never changing one (MLflow refuses that)."""
        from mlflow.entities import Param

        if self.resumed:
            logged = self.client.get_run(self.run_id).data.params
            params = {key: value for key, value in params.items() if key not in logged}

        items = [Param(key, value) for key, value in params.items()]
        for start in range(0, len(items), PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=items[start:start + PARAMS_PER_BATCH])

    def metrics(self, rows: list[list]) -> None:
        from mlflow.entities import Metric

        items = [Metric(key, value, timestamp, step) for key, value, timestamp, step in rows]
        for start in range(0, len(items), METRICS_PER_BATCH):
            self.client.log_batch(self.run_id, metrics=items[start:start + METRICS_PER_BATCH])

    def text(self, text: str, name: str) -> None:
        self.client.log_text(self.run_id, text, name)

    def artifacts(self, path: str, folder: str) -> None:
        self.client.log_artifacts(self.run_id, path, folder)

    def finish(self, status: str) -> None:
        if self.system:
            self.system.finish()
            # and a last sample: the monitor publishes one per interval after it starts, which a training
            # shorter than the writer's start-up plus an interval would never see
            self.system.collect_metrics()
            self.system.publish_metrics(self.system.aggregate_metrics())
            self.system.mlflow_logger.flush()
        self.client.set_terminated(self.run_id, status=status)


def apply(lines: Iterable[str]) -> None:
    """Carry out the operations, one JSON object per line (the first one `start`), until `finish` or the end of
    the input."""
    writer = None
    try:
        for line in lines:
            if not line.endswith("\n"):
                return                  # cut short: rank 0 died while sending it (the training's error says why)
            operation = json.loads(line)
            name = operation.pop("op")
            if name == "start":
                writer = RunWriter(TrainingConfig.model_validate(operation["config"]))
                continue
            getattr(writer, name)(**operation)
            if name == "finish":
                return
    finally:
        # rank 0 went away without finishing, or an operation failed: the run stays RUNNING (the training flow marks
        # a failed attempt FAILED), and its system-metrics monitor, which runs while the run is RUNNING, stops here
        if writer is not None and writer.system:
            writer.system.finish()


class HostedWriter:
    """The writer as a thread of this process, for the one training run that connects to `address` (pass it to
    the trainer's environment as WRITER_ENV). `close`, once the trainer has exited, waits for everything it sent
    to be logged and raises what went wrong in the writer.

    `host`: the interface to listen on; loopback unless the trainer runs on other machines. The address carries a
    random token (`host:port/token`) that the trainer sends first: a connection without it is dropped and the
    writer waits on, so another process on the network can neither write into the run nor take the trainer's
    place. `tls_files` (`tls_context`'s, this machine's): the writer speaks TLS only (`tls://host:port/token`), to
    a trainer that shows a certificate of the same CA, so the records cannot be read off the network either."""

    def __init__(self, host: str = "127.0.0.1", tls_files: dict[str, str] | None = None):
        self.listener = socket.create_server((host, 0), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.listener.settimeout(0.5)
        self.tls = tls_context(tls_files, server_side=True) if tls_files else None
        self.token = secrets.token_urlsafe(24)
        self.address = "%s%s:%d/%s" % (TLS_SCHEME if self.tls else "", host, self.listener.getsockname()[1],
                                       self.token)
        self.closing, self.error = threading.Event(), None
        self.thread = threading.Thread(target=self._serve, name="mlflow-writer", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.closing.is_set():
            try:
                connection, _ = self.listener.accept()
                connection = self._secured(connection)
            except TimeoutError:
                continue
            if connection is None:
                continue
            with connection, connection.makefile("r", encoding="utf-8") as lines:
                if not self._shows_the_token(connection, lines):
                    continue
                connection.settimeout(None)
                _notice_a_lost_peer(connection)
                try:
                    apply(_until_gone(lines))
                except Exception as error:       # the trainer's next operation fails on the closed connection
                    self.error = error
            return

    def _secured(self, connection: socket.socket) -> socket.socket | None:
        """The connection, after the TLS handshake when the writer speaks TLS; None (closed) if that failed."""
        if self.tls is None:
            return connection
        connection.settimeout(TOKEN_WAIT_S)
        try:
            return self.tls.wrap_socket(connection, server_side=True)
        except OSError as error:              # ssl.SSLError and the handshake's timeout among them
            connection.close()
            logger.warning("the MLflow writer dropped a connection without a certificate of the cluster's CA: %s",
                           error)
            return None

    def _shows_the_token(self, connection: socket.socket, lines) -> bool:
        connection.settimeout(TOKEN_WAIT_S)
        try:
            shown = lines.readline().strip()
        except (OSError, UnicodeDecodeError):
            return False
        if secrets.compare_digest(shown.encode(), self.token.encode()):
            return True
        logger.warning("the MLflow writer dropped a connection that did not show its token")
        return False

    def __enter__(self) -> HostedWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.closing.set()
        self.thread.join()
        self.listener.close()
        if self.error is not None:
            raise RuntimeError("logging the training run to MLflow failed") from self.error


def tls_context(files: dict[str, str], server_side: bool) -> ssl.SSLContext:
    """Mutual TLS as Dask's own connections make it (distributed.security): the peer must show a certificate of the
    CA in `files["ca_file"]`, this end shows `files["cert"]` with its `key`; no host name check (a cluster's own CA
    and addresses, not names)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH if server_side else ssl.Purpose.SERVER_AUTH,
                                         cafile=files["ca_file"])
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(files["cert"], files["key"])
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = False
    if server_side:
        # no TLS 1.3 session tickets: the trainer never reads them, and a socket closed with unread data resets the
        # connection, which can drop its last records (the `finish`) before the writer has read them
        context.num_tickets = 0
    return context


def _notice_a_lost_peer(connection: socket.socket) -> None:
    """TCP keepalive: a trainer's machine that vanishes without closing the connection (power, network) ends it in
    about two minutes instead of never, and `close` does not wait forever."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 6)):
        if hasattr(socket, option):                   # Linux names; elsewhere the system's defaults
            connection.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def _until_gone(lines: Iterable[str]) -> Iterator[str]:
    """The lines, ended quietly when the connection breaks: a trainer gone that way is a trainer killed."""
    try:
        yield from lines
    except OSError:
        return
