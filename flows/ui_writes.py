"""Prefect API writes that only feed the UI, such as a step's progress bar, sent by one background thread in the
order they were made, so that a step does not wait on the API for them: a progress artifact's creation and last
update took 35-60 ms of each dedup step's wall on 2 busy cores (a one-off timing, in commit 4c7f5ce's message; no
results file holds it). Each write runs in the Prefect context it was made in (its task run, its API).
`ui_writes_sent()` waits for them: the stage runner calls it before a stage returns, so that no write outlives the
run or the server it was meant for."""
from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

Result = TypeVar("Result")

_SENDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sluice-ui-writes")
_last: Future | None = None
logger = logging.getLogger(__name__)


def send_later(write: Callable[[], Result]) -> Future:
    """Queue `write` for the sender thread; its future gives the write's result (an artifact's id, say)."""
    global _last
    future = _SENDER.submit(contextvars.copy_context().run, write)
    future.add_done_callback(_log_failure)
    _last = future
    return future


def ui_writes_sent() -> None:
    """Wait until every write queued so far is done (one thread sends them in order, so the last one is enough)."""
    if _last is not None:
        wait([_last])


def _log_failure(future: Future) -> None:
    if future.exception() is not None:       # the UI misses this update; the run goes on
        logger.warning("a Prefect UI update failed: %r", future.exception())
