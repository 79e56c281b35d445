"""The batch-size ramp: how many micro-batches the next update accumulates, and the learning-rate factor for it.

Deterministic schedules (linear, stepwise) are functions of the tokens seen, so a resumed run recomputes them; the
noise-scale schedule is a decision taken from measurements, so its current accumulation is checkpointed. Every
update is clamped to the micro-batches left in the budget, so a ramped run trains exactly the planned tokens.
"""
from __future__ import annotations

import math

from configs.training import BatchRampSpec

LR_POWER = {"none": 0.0, "sqrt": 0.5, "linear": 1.0}


def lr_factor(batch: int, full_batch: int, scaling: str) -> float:
    """The learning rate's multiplier at `batch` sequences when it was tuned at `full_batch`."""
    return (batch / full_batch) ** LR_POWER[scaling]


def schedule_position(tokens_before: int, tokens_per_full_update: int) -> float:
    """The LR schedule's step for an update that starts after `tokens_before` tokens: full-batch updates so far
    (an integer, the step count, when there is no ramp)."""
    return tokens_before / tokens_per_full_update


def stepwise_levels(start: int, full: int) -> list[int]:
    """start, 2 start, 4 start, ... below full, then full."""
    levels = [start]
    while levels[-1] * 2 < full:
        levels.append(levels[-1] * 2)
    return levels + [full]


class BatchRamp:
    def __init__(self, spec: BatchRampSpec, full_accumulation: int, micro_sequences: int, seq_len: int):
        self.spec, self.full = spec, full_accumulation
        self.micro_sequences, self.micro_tokens = micro_sequences, micro_sequences * seq_len
        self.current = spec.start_accumulation if spec.schedule == "noise_scale" else full_accumulation
        self.updates = 0           # noise_scale: updates since the last decision

    def accumulation(self, tokens_before: int, tokens_total: int) -> int:
        """Micro-batches for the update that starts after `tokens_before` tokens, at most what the budget has left."""
        spec = self.spec
        if spec.schedule == "linear":
            wanted = spec.start_accumulation + (self.full - spec.start_accumulation) * tokens_before // spec.tokens
        elif spec.schedule == "stepwise":
            levels = stepwise_levels(spec.start_accumulation, self.full)
            wanted = levels[min(len(levels) - 1, tokens_before * (len(levels) - 1) // spec.tokens)]
        else:
            wanted = self.current
        left = math.ceil((tokens_total - tokens_before) / self.micro_tokens)
        return max(1, min(wanted, self.full, left))

    def planned_updates(self, tokens_total: int) -> int | None:
        """Optimizer updates a run of `tokens_total` takes: None when the noise scale decides during the run."""
        if self.spec.schedule == "noise_scale":
            return None
        tokens = updates = 0
        while tokens < tokens_total:
            tokens += self.accumulation(tokens, tokens_total) * self.micro_tokens
            updates += 1
        return updates

    def observe(self, b_noise: float | None) -> None:
        """noise_scale: after an update, every `check_every` updates grow the batch (at most doubling it, never past
        the full batch) while the smoothed B_noise, in sequences, is above it."""
        if self.spec.schedule != "noise_scale" or self.current >= self.full:
            return
        self.updates += 1
        if self.updates < self.spec.check_every:
            return
        self.updates = 0
        if b_noise is not None and b_noise > self.current * self.micro_sequences:
            covering = math.ceil(b_noise / self.micro_sequences)
            self.current = min(self.full, 2 * self.current, covering)

    def state_dict(self) -> dict:
        return {"current": self.current, "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        self.current, self.updates = state["current"], state["updates"]
