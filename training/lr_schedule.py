"""The learning-rate schedule, without torch: the run doctor recomputes it in the flow process, which then need
not import torch (~1.2 s, and its memory) to diagnose a run."""
from __future__ import annotations

import math

from configs.training import OptimizerSpec


def learning_rate(step: int, total_steps: int, spec: OptimizerSpec) -> float:
    """Linear warmup to `lr` over `warmup_steps`, then cosine down to `lr * min_lr_ratio` at the last step."""
    if step < spec.warmup_steps:
        return spec.lr * (step + 1) / spec.warmup_steps
    progress = (step - spec.warmup_steps) / max(1, total_steps - spec.warmup_steps)
    floor = spec.lr * spec.min_lr_ratio
    return floor + (spec.lr - floor) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))
