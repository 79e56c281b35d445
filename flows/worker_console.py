"""Preloaded by every Dask worker sluice starts (flows.dask_cluster.WORKER_PRELOAD): a call that fails is reported
once, by the flow that made it (its error comes back with the result, and the command prints it), so the worker
does not log it again with its traceback ("Compute Failed")."""
from __future__ import annotations

import logging


def _not_a_failed_call(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Compute Failed")


logging.getLogger("distributed.worker").addFilter(_not_a_failed_call)
