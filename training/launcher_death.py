"""A rank under torchrun dies with its launcher.

torchrun starts every rank in a session of its own, so a torchrun killed from outside (the OOM killer, a `kill -9`,
a lost container) left its ranks running: holding their memory and the rendezvous port, with nobody reading their
output and no flow to report them. The kernel can signal a process when its parent exits (Linux's
PR_SET_PDEATHSIG); each rank asks for that at start. Stopping the trainer the usual way (`flows.processes`) is
unchanged: it signals the ranks itself.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1        # <linux/prctl.h>


def die_with_launcher() -> None:
    """Under torchrun on Linux: SIGKILL this process when its launcher exits (elsewhere: nothing). torchrun starts
    the ranks from its main thread, which lives as long as torchrun does (the signal follows the parent thread)."""
    if "TORCHELASTIC_RUN_ID" not in os.environ or not sys.platform.startswith("linux"):
        return
    launcher = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != launcher:    # the launcher died before the request took effect
        os.kill(os.getpid(), signal.SIGKILL)
