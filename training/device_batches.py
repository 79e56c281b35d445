"""The trainer's batches on its device, the next one read ahead: on a GPU, while the current micro-batch
computes, a background thread gathers the next one's windows from the shards into pinned memory, and handing it
out queues a non-blocking copy to the device. A host that never waits for the device (losses stay there until the
step ends) so keeps the copy off the critical path. On CPU the batch is read when taken: there the host is the
device, and a reading thread only competed with the step for the cores (3.5% fewer tokens/s with 2 ranks on 2
cores, `benchmarks/training.py`).

The reader's position is what a checkpoint saves, and the reader has moved one batch further than the trainer has
taken: `state_dict()` is the position before the batch read ahead, so a resume starts with exactly the batch the
saved run would have taken next."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch


class DeviceBatches:
    def __init__(self, reader, batch_size: int, device: torch.device, background: bool | None = None):
        """`background`: read ahead in a thread (default: on CUDA)."""
        self.reader, self.batch_size, self.device = reader, batch_size, device
        self._pin = device.type == "cuda"
        background = self._pin if background is None else background
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batches") if background else None
        self._ahead: Future | None = None
        self._ahead_from: dict | None = None        # the reader's position before the batch read ahead

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets) on the device, each (batch_size, seq_len) int64."""
        if self._worker is None:
            inputs, targets = self._host_batch()
        else:
            if self._ahead is None:
                self._read_ahead()
            inputs, targets = self._ahead.result()
            self._read_ahead()
        return (inputs.to(self.device, non_blocking=self._pin), targets.to(self.device, non_blocking=self._pin))

    def state_dict(self) -> dict:
        return self._ahead_from if self._ahead is not None else self.reader.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self._drop_ahead()
        self.reader.load_state_dict(state)

    def _read_ahead(self) -> None:
        self._ahead_from = self.reader.state_dict()
        self._ahead = self._worker.submit(self._host_batch)

    def _drop_ahead(self) -> None:
        """Forget the batch read ahead, the reader back where it was before it."""
        if self._ahead is not None:
            self._ahead.result()
            self.reader.load_state_dict(self._ahead_from)
            self._ahead = self._ahead_from = None

    def _host_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        inputs, targets = (torch.from_numpy(np.ascontiguousarray(array))
                           for array in self.reader.next_batch(self.batch_size))
        return (inputs.pin_memory(), targets.pin_memory()) if self._pin else (inputs, targets)

    def __getattr__(self, name: str):       # sizes and checks are the reader's
        return getattr(self.reader, name)
