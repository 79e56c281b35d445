"""`sluice doctor`: a tracked training run read back from its metrics and params, checked against what a healthy
run looks like. Each finding names what was seen (steps and values) and a suggested fix; a healthy run gives none.

The checks and their thresholds (chosen wide, so that a clean run of a few dozen steps raises nothing):
- loss spikes and rollbacks: any skipped update (`spike_loss`) or rollback (`rollback_to`);
- a resume that jumps: the first losses after a resume (`resumed_at`) above the losses before it by more than
  0.25 nats and 4x the step-to-step noise;
- the first loss away from ln(vocab), where a softmax over random logits starts: outside 0.75-1.35 x ln(vocab);
- a training loss under 0.1 nats per token (2% of ln(vocab) at most): targets leaking into inputs;
- validation under the recent training loss by more than max(0.3, 10%): validation text the model trained on;
- validation rising while training falls: the last evaluation above the best by more than max(0.05, 2%) while
  the training loss kept falling (with the mixture's epochs, when the run has a mixture);
- throughput: tokens/s under 70% of the run's median at the same batch size for at least max(5, 5% of the steps)
  steps in a row;
- MFU under 25% of the device's peak (devices with a known peak only);
- the learning rate off the configured warmup + cosine schedule by more than 0.1% of the peak learning rate;
- the batch more than 10x above or below the measured gradient noise scale B_noise (the median of the last
  quarter of its estimates; none while that is not positive, i.e. still noise);
- the gradient norm growing: the median of the last fifth of the steps over 3x that of the second fifth;
- fp16's loss scale still falling after the first quarter of the run (a start too high calibrates there): lower at
  the end than then, with at least max(3, 5% of the steps) steps skipped on overflowing gradients since.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

from configs.training import OptimizerSpec
from training.batch_ramp import lr_factor, schedule_position
from training.event_metrics import RESUME_METRIC, ROLLBACK_METRIC, SCALE_METRIC, SKIPPED_METRIC, SPIKE_METRIC
from training.lr_schedule import learning_rate



# A severe finding means the run's numbers cannot be trusted (a bug, leakage, a broken resume or schedule); the
# others say it could be faster or steadier. `sluice doctor` exits non-zero on a severe one.
SEVERE = frozenset({"resume_discontinuity", "initial_loss", "loss_too_low", "validation_below_training",
                    "lr_schedule"})


@dataclass(frozen=True)
class Finding:
    check: str
    seen: str              # what the run shows, with steps and values
    fix: str
    evidence: dict = field(default_factory=dict)

    @property
    def severe(self) -> bool:
        return self.check in SEVERE

    def to_dict(self) -> dict:
        return asdict(self) | {"severe": self.severe}


@dataclass
class RunHistory:
    """What the doctor reads: params as logged, and each metric's (step, value) points in the order logged (a
    resumed run logs the steps after its checkpoint again)."""
    params: dict[str, str]
    metrics: dict[str, list[tuple[int, float]]]
    epochs: dict[str, float] = field(default_factory=dict)    # per mixture source, when the run read a mixture

    def series(self, name: str) -> dict[int, float]:
        """step -> the value logged last for it."""
        return dict(self.metrics.get(name, []))

    def param(self, name: str, default=None):
        value = self.params.get(name)
        return default if value in (None, "None", "") else value

    def total_steps(self) -> int:
        steps = self.param("plan.steps") or self.param("steps")
        if steps:
            return int(steps)
        per_update = self.param("plan.tokens_per_update")
        tokens = self.param("tokens")
        return math.ceil(int(tokens) / int(per_update)) if tokens and per_update else max(self.series("loss"), default=0)


def _spikes(run: RunHistory) -> list[Finding]:
    spikes, rollbacks = run.metrics.get(SPIKE_METRIC, []), run.metrics.get(ROLLBACK_METRIC, [])
    if not spikes and not rollbacks:
        return []
    return [Finding("loss_spikes", f"{len(spikes)} updates skipped as loss spikes (at steps "
                    f"{_steps([step for step, _ in spikes])}), {len(rollbacks)} rollbacks (to steps "
                    f"{_steps([int(value) for _, value in rollbacks])})",
                    "look at the batches at those steps (bad data?); lower optimizer.lr or lengthen the warmup; keep "
                    "grad_clip and z_loss on",
                    {"spikes": spikes, "rollbacks": rollbacks})]


def _resume_jumps(run: RunHistory) -> list[Finding]:
    losses = run.metrics.get("loss", [])
    findings = []
    for resumed_step, _ in run.metrics.get(RESUME_METRIC, []):
        before = [value for step, value in _first_logged(losses, resumed_step) if step <= resumed_step][-8:]
        after = [value for step, value in _logged_after_resume(losses, resumed_step)][:3]
        if len(before) < 3 or not after:
            continue
        noise = statistics.median(abs(b - a) for a, b in zip(before, before[1:])) or 1e-6
        jump = statistics.median(after) - statistics.median(before[-3:])
        if jump > max(0.25, 4 * noise):
            findings.append(Finding("resume_discontinuity", f"the loss jumped by {jump:.3f} nats after resuming at "
                                    f"step {resumed_step} ({statistics.median(before[-3:]):.3f} before, "
                                    f"{statistics.median(after):.3f} after)",
                                    "check that the checkpoint restores the optimizer state, the LR schedule position "
                                    "and the data reader's position; a fresh optimizer or a rewound reader shows as "
                                    "this jump", {"resumed_at": resumed_step, "before": before, "after": after}))
    return findings


def _first_logged(points: list[tuple[int, float]], until: int) -> list[tuple[int, float]]:
    seen, out = set(), []
    for step, value in points:
        if step not in seen and step <= until:
            seen.add(step)
            out.append((step, value))
    return out


def _logged_after_resume(points: list[tuple[int, float]], resumed_step: int) -> list[tuple[int, float]]:
    """The points logged after the resume: those from the last time step `resumed_step + 1` was logged on."""
    starts = [index for index, (step, _) in enumerate(points) if step == resumed_step + 1]
    return points[starts[-1]:] if starts else []


def _initial_loss(run: RunHistory) -> list[Finding]:
    losses, vocab = run.series("loss"), run.param("model.vocab_size")
    if not losses or not vocab:
        return []
    first_step = min(losses)
    first, expected = losses[first_step], math.log(int(vocab))
    if 0.75 * expected <= first <= 1.35 * expected:
        return []
    return [Finding("initial_loss", f"the first loss (step {first_step}) is {first:.3f}; a model at initialisation "
                    f"predicts uniformly, ln({vocab}) = {expected:.3f}",
                    "too high: the initialisation is too large (or the output is not scaled); too low: the targets "
                    "leak into the inputs or padding is counted; check the loss mask and the label shift",
                    {"step": first_step, "loss": first, "ln_vocab": expected})]


def _implausibly_low(run: RunHistory) -> list[Finding]:
    losses, vocab = run.series("loss"), run.param("model.vocab_size")
    floor = min(0.1, 0.02 * math.log(int(vocab))) if vocab else 0.1
    low = {step: value for step, value in losses.items() if value < floor}
    if not low:
        return []
    return [Finding("loss_too_low", f"the training loss fell to {min(low.values()):.4f} nats per token (under "
                    f"{floor:.3f} at {len(low)} steps from step {min(low)})",
                    "near-zero loss is the off-by-one: the targets must be the inputs shifted by one token; also "
                    "check that no batch repeats its own targets (leakage)", {"steps": _steps(sorted(low))})]


def _recent_training(losses: dict[int, float], step: int, window: int = 5) -> list[float]:
    return [losses[s] for s in sorted(losses) if step - window < s <= step]


def _validation_below_training(run: RunHistory) -> list[Finding]:
    losses, validation = run.series("loss"), run.series("val_loss")
    flagged = []
    for step, value in sorted(validation.items()):
        recent = _recent_training(losses, step)
        if recent and value < min(recent) - max(0.3, 0.1 * min(recent)):
            flagged.append((step, value, min(recent)))
    if not flagged:
        return []
    step, value, train = flagged[0]
    return [Finding("validation_below_training", f"validation loss {value:.3f} at step {step} is far under the "
                    f"training loss ({train:.3f}), at {len(flagged)} evaluations",
                    "the validation text overlaps the training text (leakage): split by document before tokenizing, "
                    "and decontaminate against the evaluation", {"evaluations": flagged})]


def _validation_rising(run: RunHistory) -> list[Finding]:
    losses, validation = run.series("loss"), run.series("val_loss")
    if len(validation) < 3:
        return []
    best_step = min(validation, key=validation.get)
    last_step = max(validation)
    rise = validation[last_step] - validation[best_step]
    if best_step == last_step or rise <= max(0.05, 0.02 * validation[best_step]):
        return []
    train_then, train_now = _recent_training(losses, best_step), _recent_training(losses, last_step)
    if not train_then or not train_now or statistics.median(train_now) >= statistics.median(train_then):
        return []
    repeated = {source: epochs for source, epochs in run.epochs.items() if epochs > 1}
    return [Finding("validation_rising", f"validation loss rose from {validation[best_step]:.3f} (step {best_step}) "
                    f"to {validation[last_step]:.3f} (step {last_step}) while the training loss kept falling"
                    + (f"; the mixture repeats {', '.join(f'{s} {e:.1f}x' for s, e in repeated.items())}"
                       if repeated else ""),
                    "overfitting: more unique tokens (lower max_epochs, a larger corpus), a smaller model or fewer "
                    "steps; stop at the best checkpoint",
                    {"best": [best_step, validation[best_step]], "last": [last_step, validation[last_step]],
                     "epochs": run.epochs})]


def _throughput(run: RunHistory) -> list[Finding]:
    rates = run.series("tokens_per_s")
    if len(rates) < 10:
        return []
    # Against the steps of the same batch size: a batch ramp's small batches are slower per token (the ranks reduce
    # gradients once per update, however many micro-batches it has), and that is no stall.
    sizes = run.series("batch_sequences")
    by_size: dict = {}
    for step, rate in rates.items():
        by_size.setdefault(sizes.get(step), []).append(rate)
    medians = {size: statistics.median(values) for size, values in by_size.items()}
    median = statistics.median(rates.values())
    needed = max(5, math.ceil(0.05 * len(rates)))
    slow_runs, current = [], []
    for step in sorted(rates):
        if rates[step] < 0.7 * medians[sizes.get(step)]:
            current.append(step)
            continue
        if len(current) >= needed:
            slow_runs.append(current)
        current = []
    if len(current) >= needed:
        slow_runs.append(current)
    if not slow_runs:
        return []
    worst = max(slow_runs, key=len)
    return [Finding("throughput_drop", f"tokens/s under 70% of the run's median at the same batch size (all steps: "
                    f"{median:,.0f}) for {len(worst)} "
                    f"steps in a row (steps {worst[0]}-{worst[-1]}, mean "
                    f"{statistics.fmean(rates[s] for s in worst):,.0f})",
                    "something else used the machine, or the data reader stalled (storage, a slow shard): compare the "
                    "run's system metrics over those steps",
                    {"median": median, "stretches": [[stretch[0], stretch[-1]] for stretch in slow_runs]})]


def _mfu(run: RunHistory) -> list[Finding]:
    mfu = list(run.series("mfu").values())
    if not mfu or statistics.median(mfu) >= 0.25:
        return []
    return [Finding("low_mfu", f"median MFU {statistics.median(mfu):.1%} on {run.param('hardware.device')} "
                    f"({run.param('hardware.dtype')}); a tuned dense transformer reaches 35-50%",
                    "raise micro_batch_size (fill the device), turn on hardware.compile, use bf16, and check the data "
                    "reader keeps up", {"median_mfu": statistics.median(mfu)})]


def _lr_schedule(run: RunHistory) -> list[Finding]:
    rates = run.series("lr")
    lr = run.param("optimizer.lr")
    if not rates or lr is None:
        return []
    spec = OptimizerSpec(lr=float(lr), warmup_steps=int(run.param("optimizer.warmup_steps", 0)),
                         min_lr_ratio=float(run.param("optimizer.min_lr_ratio", 0.1)))
    total, expected = run.total_steps(), _scheduled_rates(run)
    off = [(step, value, wanted) for step, value in sorted(rates.items())
           if abs(value - (wanted := expected(step, spec, total))) > 1e-3 * spec.lr]
    if not off:
        return []
    step, value, wanted = off[0]
    return [Finding("lr_schedule", f"the learning rate differs from the configured warmup + cosine at {len(off)} "
                    f"steps, first at step {step}: {value:.3g} logged, {wanted:.3g} configured",
                    "the schedule's length or warmup does not match the run (steps vs tokens, a resumed run with a "
                    "changed config): fix the config or the schedule so they agree", {"first": off[:5]})]


def _scheduled_rates(run: RunHistory):
    """The configured rate logged at step s (set before update s). A run that logs its tokens and batch (a batch
    ramp's) is placed on the schedule by the tokens before the update, scaled for its batch as the ramp says;
    otherwise step s is the schedule's step s - 1."""
    tokens, batches = run.series("tokens"), run.series("batch_sequences")
    per_update = int(run.param("plan.tokens_per_update", 0))
    full_batch = _full_batch(run)
    scaling = run.param("batch_ramp.lr_scaling", "none")

    def expected(step: int, spec: OptimizerSpec, total: int) -> float:
        if not (per_update and step in tokens and step in batches):
            return learning_rate(step - 1, total, spec)
        batch = int(batches[step])
        before = int(tokens[step]) - batch * per_update // full_batch
        rate = learning_rate(schedule_position(before, per_update), total, spec)
        return rate * lr_factor(batch, full_batch, scaling)
    return expected


def _noise_scale(run: RunHistory) -> list[Finding]:
    estimates = [value for _, value in sorted(run.series("b_noise").items())]
    if len(estimates) < 4:
        return []
    b_noise = statistics.median(estimates[-max(4, len(estimates) // 4):])
    batch = _full_batch(run)
    if b_noise <= 0:             # the estimators' difference is still noise: no measurement to compare with
        return []
    ratio = batch / b_noise
    if 0.1 <= ratio <= 10:
        return []
    return [Finding("batch_vs_noise_scale", f"the batch ({batch} sequences) is {ratio:.2g}x the measured gradient "
                    f"noise scale B_noise ({b_noise:.1f} sequences)",
                    "above: most of each batch is wasted compute, use a smaller batch (or a ramp); below: updates are "
                    "noisy, use a larger batch or a lower learning rate", {"batch": batch, "b_noise": b_noise})]


def _full_batch(run: RunHistory) -> int:
    """Sequences per full update, as configured (a batch ramp ends there)."""
    return (int(run.param("micro_batch_size", 1)) * int(run.param("hardware.data_parallel", 1))
            * int(run.param("grad_accumulation", 1)))


def _grad_norm_growth(run: RunHistory) -> list[Finding]:
    norms = [value for _, value in sorted(run.series("grad_norm").items())]
    if len(norms) < 20:
        return []
    fifth = len(norms) // 5
    early, late = statistics.median(norms[fifth:2 * fifth]), statistics.median(norms[-fifth:])
    if late <= 3 * early:
        return []
    return [Finding("grad_norm_growth", f"the gradient norm grew {late / early:.1f}x (median {early:.3g} in the "
                    f"second fifth of the run, {late:.3g} in the last)",
                    "a sign of coming instability: lower the learning rate, check weight decay and grad_clip, and "
                    "watch for loss spikes", {"early_median": early, "late_median": late})]


def _loss_scale(run: RunHistory) -> list[Finding]:
    scales = sorted(run.series(SCALE_METRIC).items())
    if len(scales) < 8:
        return []
    skipped = run.series(SKIPPED_METRIC)
    (settled_step, settled), (last_step, final) = scales[len(scales) // 4], scales[-1]
    late = skipped.get(last_step, 0) - skipped.get(settled_step, 0)
    if final >= settled or late < max(3, 0.05 * len(scales)):
        return []
    return [Finding("loss_scale_falling", f"the fp16 loss scale fell from {settled:g} at step {settled_step} to "
                    f"{final:g} at step {last_step}, with {late:g} steps skipped on overflowing gradients since",
                    "overflows that do not stop: train in bf16 (hardware.dtype: bf16 has fp32's range), or lower "
                    "the learning rate and look for loss spikes",
                    {"settled_scale": settled, "final_scale": final, "skipped_since": late})]


CHECKS = (_spikes, _resume_jumps, _initial_loss, _implausibly_low, _validation_below_training, _validation_rising,
          _throughput, _mfu, _lr_schedule, _noise_scale, _grad_norm_growth, _loss_scale)


def diagnose(run: RunHistory) -> list[Finding]:
    return [finding for check in CHECKS for finding in check(run)]


def _steps(steps: list[int], shown: int = 8) -> str:
    return ", ".join(map(str, steps[:shown])) + (f" and {len(steps) - shown} more" if len(steps) > shown else "")


def report_text(findings: list[Finding], run_id: str) -> str:
    if not findings:
        return f"# Doctor: run {run_id}\n\nNo findings: none of the {len(CHECKS)} checks saw a problem."
    lines = [f"# Doctor: run {run_id}", "", f"{len(findings)} finding(s) from {len(CHECKS)} checks.", ""]
    for finding in findings:
        lines += [f"## {finding.check}" + (" (severe)" if finding.severe else ""), "", f"- seen: {finding.seen}",
                  f"- fix: {finding.fix}", ""]
    return "\n".join(lines)
