"""Fault injection for drills and tests, as data wrappers: the batches of chosen update attempts get random
targets, which the model meets as a loss spike (`spikes.inject_bad_batches`); or every batch's targets are its
inputs, the off-by-one label bug (`drills.label_shift`)."""
from __future__ import annotations

import torch

from training.checkpointer import UpdateCounter


class BadBatches:
    def __init__(self, data, attempts: list[int], vocab_size: int, counter: UpdateCounter):
        self.data, self.attempts, self.vocab_size, self.counter = data, set(attempts), vocab_size, counter

    def next_batch(self):
        inputs, targets = self.data.next_batch()
        if self.counter.attempt in self.attempts:
            targets = torch.randint(0, self.vocab_size, targets.shape, device=targets.device)
        return inputs, targets

    def __getattr__(self, name: str):       # everything else (state, sizes, checks) is the reader's
        return getattr(self.data, name)


class LabelShift:
    """Targets = inputs: the model learns to copy the current token, and its loss falls towards zero."""
    def __init__(self, data):
        self.data = data

    def next_batch(self, batch_size: int):
        inputs, _ = self.data.next_batch(batch_size)
        return inputs, inputs.copy()

    def __getattr__(self, name: str):
        return getattr(self.data, name)
