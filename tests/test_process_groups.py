"""Stopping a child's process group stops what it started in sessions of their own too, as torchrun starts its
ranks: a rank still running when its launcher is SIGKILLed is not left behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil

from flows.processes import kill_process_group

# a launcher slow to stop (it ignores SIGTERM, as torchrun waits on its ranks) with a "rank" in its own session
# that ignores SIGTERM too
LAUNCHER = """
import signal, subprocess, sys, time
rank = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                         "print('ready', flush=True); time.sleep(600)"], start_new_session=True, stdout=subprocess.PIPE,
                        text=True)
rank.stdout.readline()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(rank.pid, flush=True)
time.sleep(600)
"""


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_rank_in_a_session_of_its_own_goes_with_its_launchers_group():
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER], start_new_session=True, stdout=subprocess.PIPE,
                                text=True)
    rank = int(launcher.stdout.readline())
    try:
        assert os.getpgid(rank) != launcher.pid
        kill_process_group(launcher.pid, grace_s=1.0, reap=launcher.poll)
        assert launcher.poll() is not None
        assert not _running(rank), "the rank outlived its launcher"
    finally:
        if _running(rank):
            os.kill(rank, signal.SIGKILL)
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
