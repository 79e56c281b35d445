"""Preloaded by every Dask worker sluice starts (flows.dask_cluster.WORKER_PRELOAD): a call that fails is reported
once, by the flow that made it (its error comes back with the result, and the command prints it), so the worker
does not log it again with its traceback ("Compute Failed"), nor the calls the flow then cancelled."""
from __future__ import annotations

import logging


def _not_a_failed_call(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Compute Failed")


def _not_a_cancelled_call(record: logging.LogRecord) -> bool:
    """A call the flow cancelled because another call of its step failed: expected, and said by the flow."""
    return not (str(record.msg).startswith("Async instruction for") and "CancelledError" in record.getMessage())


logging.getLogger("distributed.worker").addFilter(_not_a_failed_call)
logging.getLogger("distributed.worker.state_machine").addFilter(_not_a_cancelled_call)
