"""fp16's dynamic loss scaling (`hardware.dtype: fp16`): float16 gradients underflow below about 6e-8, so the loss
is multiplied by a scale before the backward pass and the gradients divided by it before clipping. A step whose
gradients overflowed (inf or NaN on any rank) is skipped and the scale halved; after 2000 clean steps it doubles.
FSDP's ShardedGradScaler decides the skip over every rank's gradient shards, so the ranks never disagree. The
scale and the skipped steps are checkpointed (a resumed run scales as the uninterrupted one) and logged; bf16
needs none of this: its exponent is fp32's."""
from __future__ import annotations

import torch
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from training.event_metrics import SCALE_METRIC, SKIPPED_METRIC


class LossScale:
    def __init__(self, device: torch.device, initial: float):
        self.scaler = ShardedGradScaler(device=device.type, init_scale=initial)
        self.scaler.scale(torch.zeros((), device=device))   # makes the scale now: a pipeline rank without the loss
        self.skipped = 0                                    # never scales one, yet unscales and steps

    def scaled(self, loss: torch.Tensor) -> torch.Tensor:
        return self.scaler.scale(loss)

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """The gradients back to their true size, before they are clipped or read."""
        self.scaler.unscale_(optimizer)

    @property
    def scale(self) -> float:
        return self.scaler.get_scale()

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        """The optimizer's step unless the gradients overflowed; whether it was skipped."""
        before = self.scale
        self.scaler.step(optimizer)
        self.scaler.update()
        skipped = self.scale < before
        self.skipped += skipped
        return skipped

    def discard(self) -> None:
        """The step was dropped (the spike guard): close the scaler's step as `step` would, without one."""
        self.scaler.update()

    def figures(self) -> dict:
        return {SCALE_METRIC: self.scale, SKIPPED_METRIC: self.skipped}

    def state_dict(self) -> dict:
        return {"scaler": self.scaler.state_dict(), "skipped": self.skipped}

    def load_state_dict(self, state: dict) -> None:
        self.scaler.load_state_dict(state["scaler"])
        self.skipped = state["skipped"]


class NoLossScale:
    """fp32 and bf16: the loss scale's calls, doing nothing (the optimizer's step is a plain step), so the training
    step reads the same under every dtype. Nothing to checkpoint: its state is None, as a run without it saves."""
    scale = 1.0

    def scaled(self, loss: torch.Tensor) -> torch.Tensor:
        return loss

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        pass

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        optimizer.step()
        return False

    def discard(self) -> None:
        pass

    def figures(self) -> dict:
        return {}

    def state_dict(self) -> None:
        return None

    def load_state_dict(self, state: dict | None) -> None:
        pass


def loss_scale(device: torch.device, dtype: str, initial: float) -> LossScale | NoLossScale:
    """fp16's dynamic loss scale, or the one that does nothing."""
    return LossScale(device, initial) if dtype == "fp16" else NoLossScale()
