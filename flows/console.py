"""What a person at the terminal sees of `sluice run`, `ablate` and `train`: one progress line per mapped step,
warnings, and the summary. Everything else Prefect, Dask and MLflow log (INFO and up) goes to a log file under
the state dir, whose path is printed first; `-v` shows it all live instead. The Prefect UI gets every log either
way (its API handler is not the console's)."""
from __future__ import annotations

import logging
import os
import sys
import time
from datetime import datetime
from pathlib import Path

PROGRESS_ENV = "SLUICE_PROGRESS"          # set by the CLI: a stage step draws progress lines
BAR_WIDTH = 24
LOG_FORMAT = "%(asctime)s.%(msecs)03d | %(levelname)-7s | %(name)s - %(message)s"
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")


def quiet_console_environment() -> None:
    """Before Prefect is imported: its console handler (here and in Dask workers, which inherit the environment)
    shows warnings and errors only, and a stage step reports progress."""
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")        # MLflow has its own console handler
    os.environ[PROGRESS_ENV] = "1"


def log_to_file(folder: Path, command: str) -> Path:
    """Everything this process logs at INFO and up, to `<folder>/<command>-<time>.log`. Prefect's logging is set
    up first: set up later, it would replace the root logger's handlers."""
    from prefect.logging.configuration import setup_logging

    setup_logging()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{command}-{datetime.now():%Y%m%d-%H%M%S}.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%H:%M:%S"))
    logging.getLogger().addHandler(handler)
    return path


def leave_failures_to_the_report() -> None:
    """Keep a failure's tracebacks and its engine's error lines (each flow and task run it passed through logs it
    again) off the console: they go to the log file, and the command reports the failure once
    (flows/failure_report.py). So does the nanny's note that it killed a worker still busy when the cluster closed:
    a call cancelled after another failed, which cannot be interrupted. Warnings still show."""
    for handler in logging.getLogger().handlers:
        if not isinstance(handler, logging.FileHandler):
            handler.addFilter(_not_a_failure)


def _not_a_failure(record: logging.LogRecord) -> bool:
    return not (record.levelno >= logging.ERROR and (record.exc_info or record.name.startswith(RUN_LOGGERS))
                or record.name == "distributed.nanny" and "still alive after" in str(record.msg))


class Progress:
    """One step's progress on stderr: redrawn in place on a terminal, one line when done otherwise."""

    def __init__(self, label: str, total: int, stream=None):
        self.label, self.total, self.started = label, total, time.monotonic()
        self.stream = stream or sys.stderr
        self.enabled = os.environ.get(PROGRESS_ENV) == "1" and total > 0
        self.live = self.enabled and self.stream.isatty()

    def update(self, done: int) -> None:
        if not self.enabled or not (self.live or done == self.total):
            return
        elapsed = time.monotonic() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        left = (self.total - done) / rate if rate > 0 else 0.0
        filled = BAR_WIDTH * done // self.total
        line = (f"  {self.label:<22} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{self.total} tasks  "
                f"{rate:.1f}/s  " + (f"ETA {left:.0f}s" if done < self.total else f"{elapsed:.1f}s"))
        end = "\n" if done == self.total else ""
        self.stream.write(("\r" if self.live else "") + line + end)
        self.stream.flush()
