"""A failed command in a few lines on the console: the cause once, where it happened (the stage, the call) when
known, and where the traceback is. Exit status 2 for what the recipe or the input must fix (too little data, a
recipe the flow's own pre-flight refused), 1 for everything else."""
from __future__ import annotations

import logging
import os
import sys
import traceback
from pathlib import Path

from configs.parsing import RecipeError
from tasks.errors import TooLittleData

BAD_INPUT = 2
INTERNAL_ERROR = 1


def report_failure(error: Exception, command: str, log: Path | None) -> int:
    """Print the report; the traceback goes to the log file (`log`), or to the console when there is none (-v)."""
    if log is not None:
        _to_log_file(error, command, log)
    else:
        traceback.print_exception(error, file=sys.stderr)
    bad_input = isinstance(error, (TooLittleData, RecipeError))
    message = str(error).strip() or type(error).__name__
    lines = [f"{command} failed: {message if bad_input else f'{type(error).__name__}: {message}'}"]
    lines += [f"  {note.strip('()')}" for note in getattr(error, "__notes__", [])]
    lines.append(f"  the traceback is in {log}" if log is not None else "  the traceback is above")
    print("\n".join(lines), file=sys.stderr)
    return BAD_INPUT if bad_input else INTERNAL_ERROR


def _to_log_file(error: Exception, command: str, log: Path) -> None:
    """The traceback into the command's log file only: the console has the report."""
    logger = logging.getLogger("sluice.failure")
    logger.propagate = False
    logger.handlers = [handler for handler in logging.getLogger().handlers
                       if isinstance(handler, logging.FileHandler) and handler.baseFilename == os.path.abspath(log)]
    logger.error("%s failed", command, exc_info=error)
