"""AdamW with decay only on matrices of linear layers, and the learning-rate schedule."""
from __future__ import annotations

import math

import torch

from configs.training import OptimizerSpec


def build_optimizer(model: torch.nn.Module, spec: OptimizerSpec) -> torch.optim.AdamW:
    """Norm weights and the (tied) embedding get no weight decay: decaying them shrinks scales and
    rare-token vectors without regularizing anything useful. Each group's `lr_scale` multiplies the schedule's
    learning rate: 1, but 1 / width multiplier for the hidden matrices under μP (training/model.py)."""
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        (no_decay if name.endswith("norm.weight") or "embedding" in name else decay).append(parameter)
    hidden_scale = 1 / model.config.width_multiplier
    groups = [{"params": decay, "weight_decay": spec.weight_decay, "lr_scale": hidden_scale,
               "lr": spec.lr * hidden_scale}, {"params": no_decay, "weight_decay": 0.0, "lr_scale": 1.0}]
    return torch.optim.AdamW(groups, lr=spec.lr, betas=spec.betas, foreach=False)


def set_learning_rate(optimizer: torch.optim.Optimizer, rate: float) -> None:
    """The schedule's `rate` into every parameter group, times the group's `lr_scale` (1 in a group restored from
    a checkpoint written before groups had one)."""
    for group in optimizer.param_groups:
        group["lr"] = rate * group.get("lr_scale", 1.0)


def learning_rate(step: int, total_steps: int, spec: OptimizerSpec) -> float:
    """Linear warmup to `lr` over `warmup_steps`, then cosine down to `lr * min_lr_ratio` at the last step."""
    if step < spec.warmup_steps:
        return spec.lr * (step + 1) / spec.warmup_steps
    progress = (step - spec.warmup_steps) / max(1, total_steps - spec.warmup_steps)
    floor = spec.lr * spec.min_lr_ratio
    return floor + (spec.lr - floor) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
