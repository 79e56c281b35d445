"""Faults injected into a real training under torchrun, for the tests of the spike guard and of `sluice doctor`.

The product's trainer knows no drills: its entry hands the Trainer to the function `SLUICE_TRAIN_HOOK` names
(training/train.py), and `drill_env(...)` points that at `install` here, with the drills as JSON in
`SLUICE_DRILLS`:

- `bad_batches=[attempts]`: these update attempts (counted from 1, never reset) get random targets, a loss spike;
- `label_shift=True`: every batch's targets are its inputs, the off-by-one label bug;
- `slow_rank`, `slow_seconds`, `slow_steps`: that rank stalls before each of those updates (counted from 1), which
  holds every rank back at the next all-reduce;
- `resume_weights_from=K`: a resume takes the model and optimizer from the checkpoint of step K and the rest (data
  position, step count) from the newest, a resume from a checkpoint of another step;
- `stop_after=K`: the run ends after step K, as a run killed then (dev/interrupted_run.py).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from dev.interrupted_run import stop_after
from training.checkpoint import checkpoint_folder, load_checkpoint
from training.checkpointer import UpdateCounter
from training.train import HOOK_ENV

DRILLS_ENV = "SLUICE_DRILLS"
TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Drills:
    bad_batches: list[int] = field(default_factory=list)
    label_shift: bool = False
    slow_rank: int | None = None
    slow_seconds: float = 0.0
    slow_steps: list[int] = field(default_factory=list)
    resume_weights_from: int | None = None
    stop_after: int | None = None


def drill_env(**drills) -> dict[str, str]:
    """What a torchrun's environment needs for its ranks to run `drills` (the fields of `Drills`)."""
    Drills(**drills)                # a misspelt drill fails here, not silently in the ranks
    return {HOOK_ENV: f"{__name__}:install", DRILLS_ENV: json.dumps(drills),
            "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}


def install(trainer) -> None:
    drills = Drills(**json.loads(os.environ[DRILLS_ENV]))
    if drills.label_shift:
        trainer.data = LabelShift(trainer.data)
    if drills.bad_batches:
        trainer.data = BadBatches(trainer.data, drills.bad_batches, trainer.model_spec.vocab_size, trainer.counter)
    if drills.slow_rank == trainer.env.rank:
        _throttle(trainer, drills.slow_seconds, drills.slow_steps)
    if drills.resume_weights_from is not None:
        _resume_weights_from(trainer, drills.resume_weights_from)
    if drills.stop_after is not None:
        stop_after(trainer, drills.stop_after)


class BadBatches:
    def __init__(self, data, attempts: list[int], vocab_size: int, counter: UpdateCounter):
        self.data, self.attempts, self.vocab_size, self.counter = data, set(attempts), vocab_size, counter

    def next_batch(self):
        inputs, targets = self.data.next_batch()
        if self.counter.attempt in self.attempts:
            targets = torch.randint(0, self.vocab_size, targets.shape, device=targets.device)
        return inputs, targets


class LabelShift:
    """Targets = inputs: the model learns to copy the current token, and its loss falls towards zero."""
    def __init__(self, data):
        self.data = data

    def next_batch(self):
        inputs, _ = self.data.next_batch()
        return inputs, inputs.clone()


def _throttle(trainer, seconds: float, steps: list[int]) -> None:
    """Inside the step's timing, as a slow GPU or host would be."""
    forward_backward = trainer.forward_backward

    def stalled(accumulation: int):
        if trainer.counter.step + 1 in steps:
            time.sleep(seconds)
        return forward_backward(accumulation)

    trainer.forward_backward = stalled


def _resume_weights_from(trainer, step: int) -> None:
    restore = trainer.checkpointer.restore

    def mismatched() -> str | None:
        resumed = restore()
        if resumed is not None:
            load_checkpoint(checkpoint_folder(trainer.config.checkpoint.dir, step), trainer.model, trainer.optimizer,
                            trainer.env.rank, trainer.env.layout)
        return resumed

    trainer.checkpointer.restore = mismatched
