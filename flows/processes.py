"""Child processes: a free loopback port for one to listen on, and stopping a child process group for good:
SIGTERM, a grace period, then SIGKILL (the trainer's torchrun and its ranks, each service of `sluice server`).
Children are started with `start_new_session=True`, so the group is theirs alone and holds every process they
spawned."""
from __future__ import annotations

import os
import signal
import socket
import time
from typing import Callable


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def kill_process_group(pgid: int, grace_s: float = 10.0, reap: Callable[[], object] = lambda: None) -> None:
    """SIGTERM the group, SIGKILL it after `grace_s`; returns once no process of the group is left. `reap` is
    called while waiting (a Popen's `poll`), so an exited leader does not linger as a zombie."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            reap()
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
