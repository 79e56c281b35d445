"""Faults for drilling `sluice doctor`: each one changes a recorded run's history the way that fault shows in
MLflow, placed relative to the run's length. The tests inject them into a clean history, the benchmark into real
tracked runs; each must be found, alone."""
from __future__ import annotations

import copy
import math

from configs.training import OptimizerSpec
from training.doctor import RunHistory
from training.event_metrics import RESUME_METRIC, SCALE_METRIC, SKIPPED_METRIC, SPIKE_METRIC
from training.lr_schedule import learning_rate

MIN_STEPS = 40          # every check has enough points (throughput 10, gradient norm 20, noise scale 4)


def _resumed(points: list[tuple[int, float]], at: int, killed: int, jump: float) -> list[tuple[int, float]]:
    """Killed after step `killed`, resumed from the checkpoint at `at`: the steps after it logged again, `jump`
    nats higher and decaying (a lost optimizer state)."""
    again = [(step, value + jump * math.exp(-(step - at) / 30)) for step, value in points if step > at]
    return [(step, value) for step, value in points if step <= killed] + again


def inject(run: RunHistory, fault: str) -> RunHistory:
    """A copy of `run` with `fault` (a check's name) in its metrics."""
    faulty = copy.deepcopy(run)
    metrics, steps = faulty.metrics, run.total_steps()
    if steps < MIN_STEPS:
        raise ValueError(f"a drill needs a run of at least {MIN_STEPS} steps, this one has {steps}")
    middle = steps // 2
    vocab = int(run.param("model.vocab_size"))

    def each(name: str, change) -> list[tuple[int, float]]:
        return [(step, change(step, value)) for step, value in metrics[name]]

    if fault == "loss_spikes":
        metrics[SPIKE_METRIC] = [(middle, 2 * math.log(vocab)), (middle + 1, 2 * math.log(vocab))]
    elif fault == "resume_discontinuity":
        metrics[RESUME_METRIC] = [(middle, float(middle))]
        for name in ("loss", "val_loss"):
            metrics[name] = _resumed(metrics[name], middle, middle + 5, 1.5)
    elif fault == "initial_loss":
        metrics["loss"] = [(1, 0.5 * math.log(vocab))] + metrics["loss"][1:]
    elif fault == "loss_too_low":
        metrics["loss"] = each("loss", lambda step, value: value * (0.004 if step > 0.75 * steps else 1))
    elif fault == "validation_below_training":
        metrics["val_loss"] = each("val_loss", lambda step, value: value - 1.0)
    elif fault == "validation_rising":
        metrics["val_loss"] = each("val_loss", lambda step, value: value + 2.0 * max(0, step - middle) / steps)
    elif fault == "throughput_drop":
        slow = range(middle, middle + max(6, steps // 10))
        metrics["tokens_per_s"] = each("tokens_per_s", lambda step, value: value * (0.4 if step in slow else 1))
    elif fault == "low_mfu":
        metrics["mfu"] = [(step, 0.08) for step in range(1, steps + 1)]
    elif fault == "lr_schedule":
        spec = OptimizerSpec(lr=float(run.param("optimizer.lr")), warmup_steps=int(run.param("optimizer.warmup_steps")),
                             min_lr_ratio=float(run.param("optimizer.min_lr_ratio")))
        metrics["lr"] = each("lr", lambda step, value: learning_rate(step - 1, 2 * steps, spec))
    elif fault == "batch_vs_noise_scale":
        batch = int(run.param("micro_batch_size")) * int(run.param("hardware.data_parallel"))
        metrics["b_noise"] = [(step, batch / 50) for step in range(2, steps + 1)]
    elif fault == "grad_norm_growth":
        metrics["grad_norm"] = each("grad_norm", lambda step, value: value * 40 ** (step / steps))
    elif fault == "loss_scale_falling":     # fp16: settled at 2^15 after 3 early overflows, halving from mid-run
        # every 5th step from mid-run: 10% of the steps skipped late, past the doctor's 5% at any run length (every
        # 10th gave 5% less one step's rounding, and a 256-step run went unflagged)
        skipped = [3 + max(0, (step - middle) // 5) for step in range(1, steps + 1)]
        metrics[SKIPPED_METRIC] = list(zip(range(1, steps + 1), skipped))
        metrics[SCALE_METRIC] = [(step, 2.0 ** (18 - count)) for step, count in metrics[SKIPPED_METRIC]]
    else:
        raise ValueError(f"no drill for {fault!r}")
    return faulty


FAULTS = ("loss_spikes", "resume_discontinuity", "initial_loss", "loss_too_low", "validation_below_training",
          "validation_rising", "throughput_drop", "low_mfu", "lr_schedule", "batch_vs_noise_scale", "grad_norm_growth",
          "loss_scale_falling")
