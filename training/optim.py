"""AdamW with decay only on matrices of linear layers, and setting its learning rate (the schedule is
`training.lr_schedule`)."""
from __future__ import annotations

import torch

from configs.training import OptimizerSpec


def build_optimizer(model: torch.nn.Module, spec: OptimizerSpec, fused: bool = False) -> torch.optim.AdamW:
    """Norm weights and the (tied) embedding get no weight decay: decaying them shrinks scales and
    rare-token vectors without regularizing anything useful. Each group's `lr_scale` multiplies the schedule's
    learning rate: 1, but 1 / width multiplier for the hidden matrices under μP (training/model.py). `fused`: one
    kernel for every parameter's update (CUDA); elsewhere the per-parameter loop."""
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        (no_decay if name.endswith("norm.weight") or "embedding" in name else decay).append(parameter)
    hidden_scale = 1 / model.config.width_multiplier
    groups = [{"params": decay, "weight_decay": spec.weight_decay, "lr_scale": hidden_scale,
               "lr": spec.lr * hidden_scale}, {"params": no_decay, "weight_decay": 0.0, "lr_scale": 1.0}]
    return torch.optim.AdamW(groups, lr=spec.lr, betas=spec.betas, **({"fused": True} if fused else {"foreach": False}))


def set_learning_rate(optimizer: torch.optim.Optimizer, rate: float) -> None:
    """The schedule's `rate` into every parameter group, times the group's `lr_scale`."""
    for group in optimizer.param_groups:
        group["lr"] = rate * group["lr_scale"]
