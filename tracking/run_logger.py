"""Rank 0's MLflow logger. Metrics are buffered and sent at `flush` in batches. The writing is done by a
`tracking.mlflow_writer.RunWriter`: the one the flow that launched the training hosts, when it says where
(`WRITER_ENV`), each operation sent as a JSON line over a socket (over TLS across the nodes of a TLS cluster); or
else one in this process (a torchrun started by hand), which imports MLflow here.

A resumed run continues the same MLflow run: its id is kept beside the checkpoints (`mlflow_writer.RUN_RECORD`).
MLflow's own system-metrics monitor (CPU, memory, disk, network, GPU when there is one) samples in the writer
into the same run as `system/...`."""
from __future__ import annotations

import json
import os
import socket
import time

from configs.training import TrainingConfig
from tracking.mlflow_writer import TLS_SCHEME, WRITER_ENV, WRITER_TLS_ENV, RunWriter, tls_context


class RunLogger:
    def __init__(self, config: TrainingConfig, enabled: bool):
        self.enabled, self.pending, self.finished = enabled, [], False
        if not enabled:
            return
        hosted = os.environ.get(WRITER_ENV)
        if hosted:
            secured = hosted.startswith(TLS_SCHEME)
            where, token = hosted.removeprefix(TLS_SCHEME).split("/", 1)
            host, port = where.rsplit(":", 1)
            try:
                connection = socket.create_connection((host, int(port)), timeout=30)
            except OSError as error:
                raise RuntimeError(f"cannot reach the flow's MLflow writer at {where} (${WRITER_ENV}): a trainer on "
                                   "another machine needs a route to the machine that runs the flow") from error
            if secured:
                connection = tls_context(json.loads(os.environ[WRITER_TLS_ENV]), server_side=False).wrap_socket(
                    connection)
            connection.settimeout(None)
            self.writer, self.stream = None, connection.makefile("w", encoding="utf-8")
            self.stream.write(token + "\n")
            self._apply("start", config=config.model_dump(mode="json"))
        else:
            self.writer, self.stream = RunWriter(config), None

    def _apply(self, operation: str, **arguments) -> None:
        if self.writer is not None:
            getattr(self.writer, operation)(**arguments)
            return
        try:
            self.stream.write(json.dumps({"op": operation, **arguments}) + "\n")
            self.stream.flush()
        except OSError as error:
            raise RuntimeError("the flow's MLflow writer went away (its error is in the flow's log)") from error

    def params(self, params: dict[str, str]) -> None:
        """Logged once, by the run that created the MLflow run (a resumed run has them already)."""
        if self.enabled:
            self._apply("params", params=params)

    def metrics(self, step: int, values: dict[str, float | None]) -> None:
        if self.enabled:
            now = int(time.time() * 1000)
            self.pending += [[key, float(value), now, step] for key, value in values.items() if value is not None]

    def flush(self) -> None:
        if self.enabled and self.pending:
            self._apply("metrics", rows=self.pending)
            self.pending = []

    def text(self, text: str, name: str) -> None:
        if self.enabled:
            self._apply("text", text=text, name=name)

    def artifacts(self, local_dir: str, folder: str) -> None:
        if self.enabled:
            self._apply("artifacts", path=local_dir, folder=folder)

    def finish(self, status: str = "FINISHED") -> None:
        if not self.enabled or self.finished:
            return
        self.finished = True
        self.flush()
        self._apply("finish", status=status)
        if self.stream is not None:
            self.stream.close()
