"""Stopping a child's process group stops what it started in sessions of their own too, as torchrun starts its
ranks: a rank still running when its launcher is SIGKILLed is not left behind; and a torchrun killed from outside
takes its ranks with it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from flows.processes import kill_process_groups

ROOT = Path(__file__).resolve().parents[1]

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
    """Two launchers' groups stopped at once (kill_process_groups, as `sluice server` stops a layer of services):
    each launcher and its rank go, through the SIGKILL after the grace period."""
    launchers = [subprocess.Popen([sys.executable, "-c", LAUNCHER], start_new_session=True, stdout=subprocess.PIPE,
                                  text=True) for _ in range(2)]
    ranks = [int(launcher.stdout.readline()) for launcher in launchers]
    try:
        assert all(os.getpgid(rank) != launcher.pid for launcher, rank in zip(launchers, ranks))
        kill_process_groups({launcher.pid: launcher.poll for launcher in launchers}, grace_s=1.0)
        assert all(launcher.poll() is not None for launcher in launchers)
        assert not [rank for rank in ranks if _running(rank)], "a rank outlived its launcher"
    finally:
        for rank in ranks:
            if _running(rank):
                os.kill(rank, signal.SIGKILL)
        for launcher in launchers:
            if launcher.poll() is None:
                os.killpg(launcher.pid, signal.SIGKILL)


# a rank that asks to die with its launcher, then waits; its line in one write (torchrun runs ranks unbuffered, where
# print writes each piece apart and two ranks' lines could interleave)
RANK = """
import os, time
from training.launcher_death import die_with_launcher
die_with_launcher()
os.write(1, f"rank {os.getpid()}\\n".encode())
time.sleep(600)
"""


def test_ranks_die_with_a_torchrun_killed_from_outside(tmp_path):
    """torchrun SIGKILLed alone (as the OOM killer does), not its group: its two ranks, each in a session of its
    own, still go."""
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    launcher = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                                 "2", str(script)], stdout=subprocess.PIPE, text=True, env=env)
    ranks: list[int] = []
    try:
        while len(ranks) < 2:
            line = launcher.stdout.readline()
            assert line, "torchrun ended before its ranks started"
            if line.startswith("rank "):
                ranks.append(int(line.split()[1]))
        assert all(os.getsid(rank) != os.getsid(launcher.pid) for rank in ranks)
        launcher.kill()
        launcher.wait()
        deadline = time.monotonic() + 10
        while any(_running(rank) for rank in ranks) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_running(rank) for rank in ranks), "a rank outlived its torchrun"
    finally:
        for rank in ranks:
            if _running(rank):
                os.kill(rank, signal.SIGKILL)
        if launcher.poll() is None:
            launcher.kill()
