"""The Trainer: one rank's model, optimizer and learning-rate schedule, training data, checkpointer and MLflow
logger, built from a `TrainingConfig`. `train()` is the loop: resume, then one `train_step()` (an optimizer update)
after another, each logged, evaluated and checkpointed when due. Rank 0 prints one JSON line per update and event.

Its parts are components with their own modules: the runner that holds the sharded model or its pipeline stages
and runs a micro-batch, an evaluation or a sampling pass through either (training/runner.py, chosen once, so the step
has no mode to branch on), the loss scale (training/loss_scale.py: fp16's, or one that does nothing), parallelism
(training/parallel.py), the checkpointer that gathers every stateful part (training/checkpointer.py), the spike guard
(training/spikes.py), the noise-scale probe (training/noise_scale.py), the batch ramp (training/batch_ramp.py),
optimizer and schedule (training/optim.py) and the logger (tracking/run_logger.py). The parts are attributes, so a
test hook (training/train.py) can wrap them.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator

import torch

from configs.tokenizer import EOS_ID
from configs.training import TrainingConfig, check_tensor_parallel
from tracking.params import flatten
from tracking.run_logger import RunLogger
from training.batch_ramp import BatchRamp, lr_factor, schedule_position
from training.checkpoint import latest_checkpoint
from training.checkpointer import Checkpointer, UpdateCounter
from training.device_batches import DeviceBatches
from training.evaluate import bits_per_byte, sample_continuations, validation_loss
from training.event_metrics import RESUME_METRIC, ROLLBACK_METRIC, SPIKE_METRIC
from training.exact_bpb import bits_per_byte_by_domain, load_suite, suite_nll
from training.loss_scale import loss_scale
from training.lr_schedule import learning_rate
from training.model import Transformer
from training.noise_scale import NoiseProbe
from training.optim import build_optimizer, set_learning_rate
from training.parallel import Distributed, all_reduce_mean, clip_gradients
from training.plan import PEAK_FLOPS, model_config, plan
from training.sequences import TokenSequences
from training.shapes import ModelConfig
from training.spikes import SpikeDetector
from training.step_timer import StepTimer
from training.runner import model_runner
from training.tensor_parallel import parallelize

COMPUTE_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}     # mixed precision; fp32: none


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite: the run stops rather than train on garbage."""


class Trainer:
    def __init__(self, config: TrainingConfig, env: Distributed, logger: RunLogger):
        self.config, self.env, self.logger = config, env, logger
        self.model_spec = model_spec = model_config(config)
        figures = plan(config)
        self.total_steps, self.flops_per_token = figures["steps"], figures["flops_per_token"]
        self.peak_flops = PEAK_FLOPS.get((config.hardware.device, config.hardware.dtype)) \
            if env.device.type == "cuda" else None
        logger.params(flatten("", config.model_dump(mode="json")) | {
            "plan.parameters": str(figures["parameters"]), "plan.tokens_per_update": str(figures["tokens_per_update"]),
            "plan.steps": str(self.total_steps)})

        check_tensor_parallel({"n_heads": model_spec.n_heads, "vocab_size": model_spec.vocab_size,
                               "seq_len": model_spec.seq_len, "ffn_dim": model_spec.ffn_dim}, env.tensor_parallel)
        torch.manual_seed(config.seed)                 # same initial weights on every rank before sharding
        self.counter = UpdateCounter()
        self.data = training_batches(config, env, model_spec)
        model = Transformer(model_spec).to(env.device)
        if env.tensor_parallel > 1:
            model = parallelize(model, env.mesh["tp"])
        self.loss_scale = loss_scale(env.device, config.hardware.dtype, config.hardware.loss_scale)
        self.runner = model_runner(model, env, config, COMPUTE_DTYPES.get(config.hardware.dtype), self.loss_scale)
        self.model = self.runner.module         # what this rank trains and checkpoints
        self.optimizer = build_optimizer(self.model, config.optimizer, fused=env.device.type == "cuda")
        self.spikes = SpikeDetector(config.spikes)
        self.micro_sequences = config.micro_batch_size * env.data_ranks
        self.ramp = BatchRamp(config.batch_ramp, config.grad_accumulation, self.micro_sequences, model_spec.seq_len)
        self.noise = NoiseProbe(self.micro_sequences, config.grad_accumulation) if config.grad_accumulation > 1 \
            else None
        self.suite = load_suite(config.eval.suite, config.data.tokenizer, EOS_ID, model_spec.seq_len) \
            if config.eval.suite else None
        self.checkpointer = Checkpointer(config.checkpoint, self.model, self.optimizer, env.rank, self.counter,
                                         {"data": self.data, "spikes": self.spikes, "noise": self.noise,
                                          "loss_scale": self.loss_scale,
                                          "ramp": self.ramp if config.batch_ramp.schedule == "noise_scale" else None},
                                         env.layout)
        self.full_update_tokens = self.micro_sequences * model_spec.seq_len * config.grad_accumulation
        self.total_tokens = self.total_steps * self.full_update_tokens   # a ramped run: more, smaller updates
        self.timer = StepTimer(env.device)

    def train(self) -> None:
        """Resume from the newest checkpoint, if any, and train to the planned tokens."""
        self.resume()
        for _ in self.steps():
            pass
        self.finish()

    def steps(self) -> Iterator[int]:
        """Train on from where the counter stands, yielding each update's step once it is logged and checkpointed
        (a caller that stops early leaves an interrupted run: tests/training_drills.py)."""
        while self.counter.tokens < self.total_tokens:
            record = self.train_step()
            if record is None:                    # a spike: the update was skipped
                continue
            step, last = self.counter.step, self.counter.tokens >= self.total_tokens
            self.echo({"step": step, **record})
            self.logger.metrics(step, record)
            if self.evaluates and (step % self.config.eval.every == 0 or last):
                self.evaluate()
            if step % self.config.log_every == 0 or self.checkpointer.is_due(last):
                self.logger.flush()     # before a checkpoint: a resume starts after it, so rows unsent then are lost
            self.checkpointer.save_if_due(last)
            yield step

    def resume(self) -> None:
        if resumed := self.checkpointer.restore():
            saved = self.checkpointer.restored_layout
            self.echo({"event": "resumed", "checkpoint": resumed, "step": self.counter.step}
                      | ({"resharded_from": saved} if saved != self.env.layout else {}))
            self.logger.metrics(self.counter.step, {RESUME_METRIC: self.counter.step})       # for `sluice doctor`

    def train_step(self) -> dict | None:
        """One optimizer update: gradients accumulated over the ramp's micro-batches, clipped, and the step; its
        record (loss, learning rate, throughput), or None when the spike guard skipped it."""
        self.timer.start()
        counter = self.counter
        counter.attempt += 1
        accumulation = self.ramp.accumulation(counter.tokens, self.total_tokens)
        rate = self.scheduled_rate(accumulation)
        set_learning_rate(self.optimizer, rate)
        loss, grad_norm = self.forward_backward(accumulation)
        self.check_finite(loss)
        if self.skipped_as_spike(loss):
            return None
        finite = math.isfinite(grad_norm)       # not, under fp16, when the gradients overflowed: a skipped step
        b_noise = self.noise.after_update(grad_norm, accumulation) if self.noise and finite else None
        self.ramp.observe(b_noise)
        self.loss_scale.step(self.optimizer)
        self.optimizer.zero_grad(set_to_none=True)
        counter.step += 1
        update_tokens = accumulation * self.micro_sequences * self.model_spec.seq_len
        counter.tokens += update_tokens
        seconds = self.timer.seconds()
        peak = self.peak_flops
        return {"loss": round(loss, 6), "lr": rate, "grad_norm": round(grad_norm, 6) if finite else None,
                "b_noise": round(b_noise, 3) if b_noise else None, "batch_sequences": accumulation * self.micro_sequences,
                "tokens": counter.tokens, "tokens_per_s": round(update_tokens / seconds, 1),
                "mfu": round(self.flops_per_token * update_tokens / seconds / (peak * self.env.world_size), 4) if peak
                else None, "peak_memory_gb": _peak_memory_gb(self.env.device),
                **self.loss_scale.figures()}

    def scheduled_rate(self, accumulation: int) -> float:
        """The schedule's learning rate for the next update, placed by the tokens trained on so far, and scaled as
        the batch ramp says when its batch is smaller than the full one."""
        config = self.config
        position = schedule_position(self.counter.tokens, self.full_update_tokens)
        return learning_rate(position, self.total_steps, config.optimizer) \
            * lr_factor(accumulation, config.grad_accumulation, config.batch_ramp.lr_scaling)

    def forward_backward(self, accumulation: int) -> tuple[float, float]:
        """One update's gradients, accumulated over `accumulation` micro-batches and clipped: (mean cross-entropy
        over the ranks, the gradient norm before clipping). The host waits for the device once, at the end: the
        losses stay on it until then. The ranks reduce gradients only after the last micro-batch (and after the
        first when the noise probe measures there), each other micro-batch accumulating onto this rank's own
        unsharded gradients; and the parameters gathered for a backward pass stay gathered for the next
        micro-batch's forward until the last (`sluice plan` counts both as memory held while accumulating). Under
        pipeline parallelism a micro-batch is a run of the schedule (its own micro-batches), whose gradients are
        reduced at its end."""
        losses = self.accumulate(accumulation)
        self.loss_scale.unscale(self.optimizer)
        grad_norm = clip_gradients(self.model.parameters(), self.config.optimizer.grad_clip or math.inf,
                                   self.runner.stages)
        return all_reduce_mean(torch.stack(losses).mean(), self.env.device), grad_norm

    def accumulate(self, accumulation: int) -> list[torch.Tensor]:
        """The forward and backward passes of the update's micro-batches; their cross-entropies, on the device."""
        noise, losses = self.noise, []
        for micro_step in range(accumulation):
            probing = noise is not None and noise.measures(micro_step, accumulation)
            inputs, targets = self.data.next_batch()
            losses.append(self.runner.micro_batch(inputs, targets, accumulation, sync=probing,
                                                  last=micro_step == accumulation - 1))
            if probing:
                noise.after_first_micro_batch(self.model, accumulation, self.loss_scale.scale, self.runner.stages)
        return losses

    def check_finite(self, loss: float) -> None:
        if not math.isfinite(loss):
            last_good = latest_checkpoint(self.config.checkpoint.dir) or "none (no step saved)"
            raise NonFiniteLoss(f"loss is {loss} at step {self.counter.step + 1} (update attempt "
                                f"{self.counter.attempt}); the last good checkpoint is {last_good}: lower "
                                f"optimizer.lr or enable grad_clip, then rerun to resume from it")

    def skipped_as_spike(self, loss: float) -> bool:
        """The spike guard: a spike's update is dropped; after repeated spikes the model, optimizer and counter
        roll back to the newest checkpoint while the data goes on, so the batches since are skipped."""
        spike = self.config.spikes.enabled and self.spikes.is_spike(loss)
        wants_rollback = self.spikes.record(loss, spike)
        if not spike:
            return False
        counter = self.counter
        self.optimizer.zero_grad(set_to_none=True)
        self.loss_scale.discard()
        self.echo({"event": "spike_skipped", "attempt": counter.attempt, "step": counter.step, "loss": round(loss, 6)})
        self.logger.metrics(counter.step, {SPIKE_METRIC: loss})
        if wants_rollback and (checkpoint := self.checkpointer.rollback()):
            self.spikes.rolled_back()
            self.echo({"event": "rollback", "attempt": counter.attempt, "checkpoint": checkpoint, "step": counter.step})
            self.logger.metrics(counter.step, {ROLLBACK_METRIC: counter.step})
        return True

    @property
    def evaluates(self) -> bool:
        return bool(self.config.data.validation) or self.suite is not None

    def evaluate(self) -> None:
        """Validation loss on the variant's own split (a training signal, not a comparison across data), exact
        bits per byte on the suite (the same held-out texts for every model: the comparison), and sampled text."""
        config, env, step, seq_len = self.config, self.env, self.counter.step, self.model_spec.seq_len
        self.model.eval()
        values = {}
        if config.data.validation:
            loss = validation_loss(self.runner.eval_loss, config.data.validation, seq_len, config.micro_batch_size,
                                   config.eval.batches, env.data_rank, env.data_ranks, env.device)
            values = {"val_loss": round(loss, 6), "val_bpb": bits_per_byte(loss, config.data.bytes_per_token)}
        if self.suite is not None:
            nll = suite_nll(self.runner.window_nll, self.suite, seq_len, config.micro_batch_size, env.data_rank,
                            env.data_ranks, env.device, env.mesh["dp"].get_group())
            values |= {f"suite_bpb/{name}": round(value, 6)
                       for name, value in bits_per_byte_by_domain(nll, self.suite).items()}
        self.echo({"event": "eval", "step": step, **values})
        self.logger.metrics(step, values)
        if config.data.tokenizer:
            text = sample_continuations(self.runner.last_logits, seq_len, config.data.tokenizer, config.eval.prompts,
                                        config.eval.sample_tokens, env.device)
            self.echo({"event": "samples", "step": step, "samples": text})
            self.logger.text(text, f"samples/step-{step:06d}.txt")
        self.model.train()

    def finish(self) -> None:
        """The run's end: the noise scale it measured, the model's shape, the final checkpoint, the logger closed."""
        noise, logger = self.noise, self.logger
        if noise and (b_noise := noise.b_noise()):
            self.echo({"event": "noise_scale", "b_noise": round(b_noise, 3), "batch_sequences": noise.sequences})
            logger.text(f"gradient noise scale B_noise = {b_noise:.1f} sequences; configured batch "
                        f"{noise.sequences} sequences ({noise.sequences / b_noise:.2f}x B_noise)\n", "noise_scale.txt")
        logger.text(json.dumps(self.model_spec.to_dict(), indent=2), "model_config.json")
        final = self.checkpointer.latest()
        if final and self.env.is_main:
            logger.artifacts(final, "checkpoint")
        logger.finish()

    def echo(self, record: dict) -> None:
        """One JSON line on rank 0's standard output (the training flow follows them)."""
        if self.env.is_main:
            print(json.dumps(record), flush=True)


def training_batches(config: TrainingConfig, env: Distributed, model_spec: ModelConfig) -> DeviceBatches:
    """This rank's training batches on its device, read ahead, checked against the model and the batch."""
    data = TokenSequences(config.data.train, model_spec.seq_len, config.data.seed, env.data_rank, env.data_ranks,
                          config.data.order, config.data.stream_block)      # a replica's tp ranks: the same
    data.check_vocabulary(model_spec.vocab_size)
    per_update = config.micro_batch_size * config.grad_accumulation
    if data.windows_per_rank < per_update:
        raise ValueError(f"the training shards give each of {env.data_ranks} replicas {data.windows_per_rank} "
                         f"sequences of {model_spec.seq_len} tokens, fewer than one update needs "
                         f"({config.micro_batch_size} x {config.grad_accumulation} accumulation): more data, a "
                         f"smaller batch or a shorter seq_len")
    return DeviceBatches(data, config.micro_batch_size, env.device)


def _peak_memory_gb(device: torch.device) -> float | None:
    """The most memory this rank's tensors have held on its GPU so far."""
    return round(torch.cuda.max_memory_allocated(device) / 1e9, 3) if device.type == "cuda" else None
