"""Child processes: a free loopback port for one to listen on, and stopping a child process group for good:
SIGTERM, a grace period, then SIGKILL (the trainer's torchrun and its ranks, each service of `sluice server`).
Children are started with `start_new_session=True`, so the group is theirs alone and holds what they spawned,
but for what they start in sessions of their own (torchrun's ranks), which is stopped with them."""
from __future__ import annotations

import os
import signal
import socket
import time
from typing import Callable

import psutil


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def kill_process_group(pgid: int, grace_s: float = 10.0, reap: Callable[[], object] = lambda: None) -> None:
    """SIGTERM the group, SIGKILL what is left after `grace_s`; returns once none of it is left. `reap` is called
    while waiting (a Popen's `poll`), so an exited leader does not linger as a zombie.

    What the group started in sessions of its own (torchrun starts every rank so) is found among the leader's
    descendants before the first signal and is signalled alike: a rank still running when torchrun is SIGKILLed
    after the grace period is not left behind as an orphan. (A torchrun killed from outside, before this is called,
    leaves its ranks re-parented away from it, where this cannot find them: each rank dies with its torchrun
    instead, `training.launcher_death`.)"""
    kill_process_groups({pgid: reap}, grace_s)


def kill_process_groups(reaps: dict[int, Callable[[], object]], grace_s: float = 10.0) -> None:
    """`kill_process_group` of several groups at once (process group id -> its `reap`): all signalled, then waited
    on together, so stopping them takes the slowest one's time, not the sum."""
    strays = {pgid: _descendants_outside(pgid) for pgid in reaps}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = [pgid for pgid in reaps if _signal(pgid, strays[pgid], sig)]
        deadline = time.monotonic() + grace_s
        while left and time.monotonic() < deadline:
            for pgid in left:
                reaps[pgid]()
            left = [pgid for pgid in left if _signal(pgid, strays[pgid], 0)]
            if left:
                time.sleep(0.2)
        if not left:
            return


def _descendants_outside(pgid: int) -> list[psutil.Process]:
    try:
        descendants = psutil.Process(pgid).children(recursive=True)
    except psutil.Error:
        return []
    outside = []
    for process in descendants:
        try:
            if os.getpgid(process.pid) != pgid:
                outside.append(process)
        except ProcessLookupError:
            pass
    return outside


def _signal(pgid: int, strays: list[psutil.Process], sig: int) -> bool:
    """`sig` to the group and to the strays still running (0: only look); whether any of them was there."""
    found = False
    try:
        os.killpg(pgid, sig)
        found = True
    except ProcessLookupError:
        pass
    for process in strays:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                if sig:
                    process.send_signal(sig)
                found = True
        except psutil.Error:
            pass
    return found
