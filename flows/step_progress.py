"""A stage step's progress where people watch it: the console line (`flows.console.Progress`), lines in the run's
logs, and a Prefect progress artifact on the step's task run (the UI's bar). The logs and the artifact move at
every tenth of the step and at most every few seconds otherwise, so a step of thousands of calls costs the API
tens of requests, not thousands; and at most once a second before the last call, so a sub-second step costs two
(start and end): the API's work shares the cores with the step's calls (8 updates took 9% of a 0.9 s tokenize step
on 2 workers, median 0.926 -> 0.845 s with them off, 4 runs each: a one-off timing, in commit 2e66b1c's message; no
results file holds it). The artifact's writes go through `flows.ui_writes`, so the step does not wait for them."""
from __future__ import annotations

import logging
import time

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from flows.console import Progress
from flows.ui_writes import send_later

REPORT_EVERY_SECONDS = 5.0          # the longest wait between reports while calls finish
REPORT_AT_MOST_EVERY_SECONDS = 1.0  # the shortest, but for the last call's


class StepProgress:
    def __init__(self, label: str, total: int, logger: logging.Logger | logging.LoggerAdapter):
        self.label, self.total, self.logger = label, total, logger
        self.console = Progress(label, total)
        self.artifact = send_later(lambda: create_progress_artifact(0.0, description=f"{label}: {total} calls")) \
            if total else None
        self.reported_at, self.reported_tenth = time.monotonic(), 0

    def update(self, done: int) -> None:
        self.console.update(done)
        tenth, waited = 10 * done // self.total, time.monotonic() - self.reported_at
        if done < self.total and (waited < REPORT_AT_MOST_EVERY_SECONDS
                                  or tenth == self.reported_tenth and waited < REPORT_EVERY_SECONDS):
            return
        self.reported_at, self.reported_tenth = time.monotonic(), tenth
        self.logger.info("%s: %d/%d done", self.label, done, self.total)
        share = 100.0 * done / self.total
        if self.artifact is not None:
            send_later(lambda: update_progress_artifact(self.artifact.result(), share))   # the creation is sent first
