"""Prefect's temporary server, started before the flows are imported, so that the two overlap.

Without PREFECT_API_URL, Prefect starts a temporary server of its own at the first API call: after the ~4 s of
importing the flows, and then another ~4-8 s of waiting for it. `sluice run|train|ablate` start the same server
(uvicorn serving Prefect's API app, UI off, the database under PREFECT_HOME) as a child process first thing,
point this process and the Dask workers it starts at it through PREFECT_API_URL, import the flows while it comes
up, and wait for its health check only before the first flow call. It stops when the process exits; it stays in
the process's group, so killing the group kills it too.
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import time

import httpx

from flows.processes import free_port

_started: "TemporaryServer | None" = None


class TemporaryServer:
    def __init__(self):
        port = free_port()
        self.api_url = f"http://127.0.0.1:{port}/api"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app", "--host",
             "127.0.0.1", "--port", str(port), "--log-level", "error", "--lifespan", "on"],
            env=os.environ | {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                              "PREFECT__SERVER_FINAL": "1"})
        self.ready = False
        atexit.register(self.stop)

    def wait_ready(self) -> None:
        timeout_s = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120"))
        deadline = time.monotonic() + timeout_s
        while not self.ready:
            if self.process.poll() is not None:
                raise RuntimeError(f"Prefect's temporary server exited with {self.process.returncode} before it "
                                   f"answered (see the lines above)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Prefect's temporary server did not answer within {timeout_s:.0f} s "
                                   f"(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)")
            try:
                self.ready = httpx.get(f"{self.api_url}/health", timeout=2).status_code == 200
            except httpx.TransportError:
                pass
            if not self.ready:
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_temporary_server() -> None:
    """Starts one unless a Prefect API is configured; call before Prefect is imported."""
    global _started
    if os.environ.get("PREFECT_API_URL") or _started is not None:
        return
    _started = TemporaryServer()
    os.environ["PREFECT_API_URL"] = _started.api_url


def wait_for_prefect() -> None:
    """Before the first flow call: the temporary server answers (no-op when none was started)."""
    if _started is not None:
        _started.wait_ready()
