"""The checkpointer: it owns the checkpoint folder and interval and gathers every stateful part of the trainer
(model and optimizer through torch.distributed.checkpoint; the data position, the spike history, the noise scale
and the update counter in each rank's own file), so the loop only asks it to save, restore or roll back."""
from __future__ import annotations

from typing import Protocol

import torch.distributed as dist

from configs.training import CheckpointSpec
from training.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint


class Stateful(Protocol):
    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


class UpdateCounter:
    """Optimizer steps taken, tokens trained on, and update attempts made (a skipped spike is an attempt but not a
    step). The step is the checkpoint's own; a rollback rewinds the step and the tokens, while the attempts count on
    (across resumes too), so an attempt number names one update attempt of the whole run."""

    def __init__(self):
        self.step = self.attempt = self.tokens = 0

    def state_dict(self) -> dict:
        return {"attempt": self.attempt, "tokens": self.tokens}

    def load_state_dict(self, state: dict) -> None:
        self.attempt = state["attempt"]
        self.rewind(state)

    def rewind(self, state: dict) -> None:
        self.tokens = state["tokens"]


class Checkpointer:
    def __init__(self, spec: CheckpointSpec, model, optimizer, rank: int, counter: UpdateCounter,
                 parts: dict[str, Stateful | None], layout: dict):
        """`layout`: this run's ranks per dimension (training.parallel.Distributed.layout); a checkpoint saved under
        another is resharded to it (training/checkpoint.py)."""
        self.spec, self.rank, self.counter, self.layout = spec, rank, counter, layout
        self.restored_layout: dict | None = None      # the layout the checkpoint restored was saved under
        self.model, self.optimizer, self.parts = model, optimizer, {"counter": counter} | parts

    def is_due(self, last: bool) -> bool:
        return self.counter.step % self.spec.every == 0 or last

    def save_if_due(self, last: bool) -> None:
        step = self.counter.step
        if self.is_due(last):
            states = {name: part.state_dict() if part is not None else None for name, part in self.parts.items()}
            save_checkpoint(self.spec.dir, step, self.model, self.optimizer, states, self.rank, self.layout)

    def restore(self) -> str | None:
        """Everything from the newest complete checkpoint, the counter's step included: its folder, or None for
        a fresh start."""
        folder = self.latest()
        if folder is None:
            return None
        restored = load_checkpoint(folder, self.model, self.optimizer, self.rank, self.layout)
        for name, part in self.parts.items():
            if part is not None:
                part.load_state_dict(restored["trainer"][name])
        self.counter.step, self.restored_layout = restored["step"], restored["layout"]
        return folder

    def rollback(self) -> str | None:
        """Model, optimizer, step and tokens from the newest checkpoint, while the data reader goes on (the batches
        since are skipped): its folder, or None when there is none to go back to."""
        folder = self.latest()
        if folder is None:
            return None
        restored = load_checkpoint(folder, self.model, self.optimizer, self.rank, self.layout)
        self.counter.step = restored["step"]
        self.counter.rewind(restored["trainer"]["counter"])
        return folder

    def latest(self) -> str | None:
        """The newest complete checkpoint as rank 0 sees it, the same on every rank (a collective: every rank calls
        it at the same point). Each rank listing the folder itself could restore different steps across nodes whose
        shared filesystem caches show one of them an older listing; a rank that cannot see rank 0's choice fails
        loading it instead."""
        found = latest_checkpoint(self.spec.dir) if self.rank == 0 else None
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            chosen = [found]
            dist.broadcast_object_list(chosen, src=0)
            found = chosen[0]
        return found
