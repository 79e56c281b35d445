"""Seconds of one optimizer step: on a GPU by CUDA events around the step's device work (read after the step's
one synchronisation, so timing adds none), elsewhere by the host clock."""
from __future__ import annotations

import time

import torch


class StepTimer:
    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self._started = 0.0
        if self.cuda:
            self._start, self._end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def start(self) -> None:
        if self.cuda:
            self._start.record()
        else:
            self._started = time.perf_counter()

    def seconds(self) -> float:
        """Since `start`; waits for the device work queued so far."""
        if not self.cuda:
            return time.perf_counter() - self._started
        self._end.record()
        self._end.synchronize()
        return self._start.elapsed_time(self._end) / 1000
