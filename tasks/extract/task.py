"""The extraction stage's per-shard call: one WARC shard, run as a plain Dask task by the stage's step
(`Steps.map`, tasks/stage.py). Kept apart from the flows so a Dask worker that runs it imports the extraction
code, not MLflow or the flow modules."""
from __future__ import annotations

import logging

from configs.schema import ExtractConfig
from tasks.extract.shard import ShardJob, extract_shard

MAX_WARNINGS = 100      # per shard sent back to the run's logs; the stats count every problem


class _Collected(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < MAX_WARNINGS:
            self.lines.append(record.getMessage())


def extract_shard_task(job: ShardJob, config: ExtractConfig) -> dict:
    """The shard's result, with the warnings it logged (damaged records, bad charsets) under `warnings` for the
    step to log where the run's logs go (the Prefect UI); a Dask worker has no Prefect run to log to."""
    collected = _Collected()
    log = logging.Logger(f"extract {job.warc_name}")     # this call's own, not a shared registered logger
    log.addHandler(collected)
    return extract_shard(job, config, log) | {"warnings": collected.lines}
