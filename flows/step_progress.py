"""A stage step's progress where people watch it: the console line (`flows.console.Progress`), lines in the run's
logs, and a Prefect progress artifact on the step's task run (the UI's bar). The logs and the artifact move at
every tenth of the step and at most every few seconds otherwise, so a step of thousands of calls costs the API
tens of requests, not thousands."""
from __future__ import annotations

import logging
import time

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from flows.console import Progress

REPORT_EVERY_SECONDS = 5.0


class StepProgress:
    def __init__(self, label: str, total: int, logger: logging.Logger | logging.LoggerAdapter):
        self.label, self.total, self.logger = label, total, logger
        self.console = Progress(label, total)
        self.artifact_id = create_progress_artifact(0.0, description=f"{label}: {total} calls") if total else None
        self.reported_at, self.reported_tenth = time.monotonic(), 0

    def update(self, done: int) -> None:
        self.console.update(done)
        tenth = 10 * done // self.total
        if done < self.total and tenth == self.reported_tenth \
                and time.monotonic() - self.reported_at < REPORT_EVERY_SECONDS:
            return
        self.reported_at, self.reported_tenth = time.monotonic(), tenth
        self.logger.info("%s: %d/%d done", self.label, done, self.total)
        update_progress_artifact(self.artifact_id, 100.0 * done / self.total)
