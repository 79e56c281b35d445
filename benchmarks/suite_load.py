"""A pytest plugin for benchmarks/test_suite.py: how busy the machine's cores were during each test's set-up, call
and tear-down (the machine's busy CPU seconds from /proc/stat: the test's own process, its servers, workers and
torchrun ranks alike), one JSON line per phase in the file SLUICE_SUITE_LOAD names.

A 2-core suite that keeps its cores busy 70% of its wall time is bound by what waits (a server's start, one process
importing torch while the other core idles), not by what computes: this says which modules those are."""
from __future__ import annotations

import json
import os
import time

import pytest

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def busy_cpu_s() -> float:
    """CPU seconds the machine's cores have spent busy since boot (all but idle and I/O wait)."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / _CLOCK_TICKS


def _measured(phase: str):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item):
        started, busy = time.monotonic(), busy_cpu_s()
        yield
        with open(os.environ["SLUICE_SUITE_LOAD"], "a") as out:
            out.write(json.dumps({"test": item.nodeid, "phase": phase, "wall_s": time.monotonic() - started,
                                  "busy_cpu_s": busy_cpu_s() - busy}) + "\n")
    return hook


pytest_runtest_setup = _measured("setup")
pytest_runtest_call = _measured("call")
pytest_runtest_teardown = _measured("teardown")
