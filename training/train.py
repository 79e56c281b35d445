"""The trainer, one process per rank under torchrun:

    torchrun --nproc-per-node 2 -m training.train configs/train.yaml [--stop-after N]

The loop reads like the algorithm: data, forward, backward (accumulated), clip, step, log, checkpoint. Its
parts are components with their own modules: parallelism (training/parallel.py), the checkpointer that gathers
every stateful part (training/checkpointer.py), the spike guard (training/spikes.py), the noise-scale probe
(training/noise_scale.py), the batch ramp (training/batch_ramp.py), drills as a data wrapper
(training/faults.py), optimizer and schedule (training/optim.py) and the MLflow logger (tracking/run_logger.py).
Each optimizer step prints one JSON line on rank 0.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from configs.tokenizer import EOS_ID
from configs.training import TrainingConfig, load_training_config
from tracking.params import flatten
from tracking.run_logger import RunLogger
from training.batch_ramp import BatchRamp, lr_factor, schedule_position
from training.checkpoint import latest_checkpoint
from training.checkpointer import Checkpointer, UpdateCounter
from training.device_batches import DeviceBatches
from training.evaluate import bits_per_byte, sample_continuations, validation_loss
from training.exact_bpb import SuiteTokens, bits_per_byte_by_domain, load_suite, suite_nll
from training.model import Transformer
from training.doctor import RESUME_METRIC, ROLLBACK_METRIC, SPIKE_METRIC
from training.faults import BadBatches, LabelShift
from training.launcher_death import die_with_launcher
from training.lr_schedule import learning_rate
from training.noise_scale import NoiseProbe
from training.optim import build_optimizer, set_learning_rate
from training.parallel import all_reduce_mean, full_norm, init_distributed, shard_model
from training.plan import PEAK_FLOPS, model_config, plan
from training.sequences import TokenSequences
from training.spikes import SpikeDetector
from training.step_timer import StepTimer


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite: the run stops rather than train on garbage."""


def loss_function(logits: torch.Tensor, targets: torch.Tensor, z_loss: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy plus z-loss (PaLM): z_loss * mean(log Z)^2 keeps the softmax normalizer near 1."""
    logits = logits.float().flatten(0, 1)
    cross_entropy = F.cross_entropy(logits, targets.flatten())
    return cross_entropy + z_loss * torch.logsumexp(logits, dim=-1).pow(2).mean(), cross_entropy


def train(config: TrainingConfig, stop_after: int | None = None) -> None:
    env = init_distributed()
    model_spec = model_config(config)
    figures = plan(config)
    total_steps = figures["steps"]
    peak = PEAK_FLOPS.get((config.hardware.device, config.hardware.dtype)) if env.device.type == "cuda" else None
    tracker = RunLogger(config, enabled=env.is_main and config.mlflow.enabled)
    tracker.params(flatten("", config.model_dump(mode="json")) | {"plan.parameters": str(figures["parameters"]),
                                                                 "plan.tokens_per_update": str(figures["tokens_per_update"]),
                                                                 "plan.steps": str(total_steps)})
    try:
        _train_loop(config, env, model_spec, total_steps, figures["flops_per_token"], peak, tracker, stop_after)
    except BaseException:
        tracker.finish("FAILED")
        raise
    dist.barrier()
    dist.destroy_process_group()


def _train_loop(config: TrainingConfig, env, model_spec, total_steps: int, flops_per_token: int,
                peak: float | None, tracker: RunLogger, stop_after: int | None) -> None:
    torch.manual_seed(config.seed)                 # same initial weights on every rank before sharding
    counter = UpdateCounter()
    data = _training_data(config, env, model_spec, counter)
    model = shard_model(Transformer(model_spec).to(env.device), env.device,
                        bf16=config.hardware.dtype == "bf16",        # on CPU too: FSDP2's policy casts there as well
                        activation_checkpointing=config.hardware.activation_checkpointing,
                        compile_scope=config.hardware.compile_scope if config.hardware.compile else None)
    optimizer = build_optimizer(model, config.optimizer, fused=env.device.type == "cuda")
    spikes = SpikeDetector(config.spikes)
    micro = config.micro_batch_size * env.world_size
    ramp = BatchRamp(config.batch_ramp, config.grad_accumulation, micro, model_spec.seq_len)
    noise = NoiseProbe(micro, config.grad_accumulation) if config.grad_accumulation > 1 else None
    suite = load_suite(config.eval.suite, config.data.tokenizer, EOS_ID, model_spec.seq_len) \
        if config.eval.suite else None
    checkpointer = Checkpointer(config.checkpoint, model, optimizer, env.rank, counter,
                                {"data": data, "spikes": spikes, "noise": noise,
                                 "ramp": ramp if config.batch_ramp.schedule == "noise_scale" else None},
                                config.drills.resume_weights_from)
    full_update_tokens = micro * model_spec.seq_len * config.grad_accumulation
    total_tokens = total_steps * full_update_tokens         # a ramped run has more, smaller updates: same tokens
    if resumed := checkpointer.restore():
        if counter.tokens is None:                  # a checkpoint from before batch ramps: full updates only
            counter.tokens = counter.step * full_update_tokens
        _log(env, {"event": "resumed", "checkpoint": resumed, "step": counter.step})
        tracker.metrics(counter.step, {RESUME_METRIC: counter.step})       # for `sluice doctor`

    timer = StepTimer(env.device)
    while counter.tokens < total_tokens:
        timer.start()
        counter.attempt += 1
        accumulation = ramp.accumulation(counter.tokens, total_tokens)
        rate = learning_rate(schedule_position(counter.tokens, full_update_tokens), total_steps, config.optimizer) \
            * lr_factor(accumulation, config.grad_accumulation, config.batch_ramp.lr_scaling)
        if env.rank == config.drills.slow_rank and counter.step + 1 in config.drills.slow_steps:
            time.sleep(config.drills.slow_seconds)          # a drill: a throttled rank holds every rank back
        set_learning_rate(optimizer, rate)
        loss_value, grad_norm = _forward_backward(config, env, model, data, noise, accumulation)
        if not math.isfinite(loss_value):
            raise NonFiniteLoss(f"loss is {loss_value} at step {counter.step + 1} (update attempt {counter.attempt}); "
                                f"the last good checkpoint is "
                                f"{latest_checkpoint(config.checkpoint.dir) or 'none (no step saved)'}: "
                                f"lower optimizer.lr or enable grad_clip, then rerun to resume from it")
        spike = config.spikes.enabled and spikes.is_spike(loss_value)
        wants_rollback = spikes.record(loss_value, spike)
        if spike:                             # skip the update; after repeated spikes, roll back
            optimizer.zero_grad(set_to_none=True)
            _log(env, {"event": "spike_skipped", "attempt": counter.attempt, "step": counter.step,
                       "loss": round(loss_value, 6)})
            tracker.metrics(counter.step, {SPIKE_METRIC: loss_value})
            if wants_rollback and (checkpoint := checkpointer.rollback()):
                spikes.rolled_back()          # the data goes on: the batches since are skipped
                _log(env, {"event": "rollback", "attempt": counter.attempt, "checkpoint": checkpoint,
                           "step": counter.step})
                tracker.metrics(counter.step, {ROLLBACK_METRIC: counter.step})
            continue
        b_noise = noise.after_update(grad_norm, accumulation) if noise else None
        ramp.observe(b_noise)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        counter.step += 1
        update_tokens = accumulation * micro * model_spec.seq_len
        counter.tokens += update_tokens
        last = counter.tokens >= total_tokens
        seconds = timer.seconds()
        record = {"loss": round(loss_value, 6), "lr": rate, "grad_norm": round(grad_norm, 6),
                  "b_noise": round(b_noise, 3) if b_noise else None, "batch_sequences": accumulation * micro,
                  "tokens": counter.tokens, "tokens_per_s": round(update_tokens / seconds, 1),
                  "mfu": round(flops_per_token * update_tokens / seconds / (peak * env.world_size), 4) if peak
                  else None, "peak_memory_gb": _peak_memory_gb(env.device)}
        _log(env, {"step": counter.step, **record})
        tracker.metrics(counter.step, record)
        if (config.data.validation or suite is not None) and (counter.step % config.eval.every == 0 or last):
            _evaluate(config, env, model, model_spec, counter.step, tracker, suite)
        if counter.step % config.log_every == 0 or checkpointer.is_due(last):
            tracker.flush()        # before a checkpoint: a resume starts after it, so rows unsent by then would be lost
        checkpointer.save_if_due(last)
        if stop_after is not None and counter.step >= stop_after:
            tracker.flush()
            return
    if noise and (b_noise := noise.b_noise()):
        _log(env, {"event": "noise_scale", "b_noise": round(b_noise, 3), "batch_sequences": noise.sequences})
        tracker.text(f"gradient noise scale B_noise = {b_noise:.1f} sequences; configured batch {noise.sequences} "
                     f"sequences ({noise.sequences / b_noise:.2f}x B_noise)\n", "noise_scale.txt")
    tracker.text(json.dumps(model_spec.to_dict(), indent=2), "model_config.json")
    final = checkpointer.latest()
    if final and env.is_main:
        tracker.artifacts(final, "checkpoint")
    tracker.finish()


def _training_data(config: TrainingConfig, env, model_spec, counter: UpdateCounter):
    """This rank's training batches on its device, read ahead, checked against the model and the batch, with any
    drill's bad batches."""
    data = TokenSequences(config.data.train, model_spec.seq_len, config.data.seed, env.rank, env.world_size,
                          config.data.order, config.data.stream_block)
    data.check_vocabulary(model_spec.vocab_size)
    per_update = config.micro_batch_size * config.grad_accumulation
    if data.windows_per_rank < per_update:
        raise ValueError(f"the training shards give each of {env.world_size} ranks {data.windows_per_rank} "
                         f"sequences of {model_spec.seq_len} tokens, fewer than one update needs "
                         f"({config.micro_batch_size} x {config.grad_accumulation} accumulation): more data, a "
                         f"smaller batch or a shorter seq_len")
    if config.drills.label_shift:
        data = LabelShift(data)
    batches = DeviceBatches(data, config.micro_batch_size, env.device)
    if config.spikes.inject_bad_batches:     # outside the read-ahead: it marks the batches of the current attempt
        return BadBatches(batches, config.spikes.inject_bad_batches, model_spec.vocab_size, counter)
    return batches


def _forward_backward(config: TrainingConfig, env, model, batches, noise: NoiseProbe | None,
                      accumulation: int) -> tuple[float, float]:
    """One update's gradients, accumulated over `accumulation` micro-batches and clipped: (mean cross-entropy over
    the ranks, the gradient norm before clipping). The host waits for the device once, at the end: the losses stay
    on it until then. The ranks reduce gradients only after the last micro-batch (and after the first when the
    noise probe measures there), each other micro-batch accumulating onto this rank's own unsharded gradients; and
    the parameters gathered for a backward pass stay gathered for the next micro-batch's forward until the last
    (`sluice plan` counts both as memory held while accumulating)."""
    losses = []
    for micro_step in range(accumulation):
        probing = noise is not None and noise.measures(micro_step, accumulation)
        last = micro_step == accumulation - 1
        model.set_requires_gradient_sync(probing or last)
        model.set_reshard_after_backward(last)
        inputs, targets = batches.next_batch()
        loss, cross_entropy = loss_function(model(inputs), targets, config.optimizer.z_loss)
        (loss / accumulation).backward()
        losses.append(cross_entropy.detach())
        if probing:
            noise.after_first_micro_batch(model, accumulation)
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.optimizer.grad_clip or math.inf)
    return all_reduce_mean(torch.stack(losses).mean(), env.device), full_norm(grad_norm)


def _peak_memory_gb(device: torch.device) -> float | None:
    """The most memory this rank's tensors have held on its GPU so far."""
    return round(torch.cuda.max_memory_allocated(device) / 1e9, 3) if device.type == "cuda" else None


def _evaluate(config: TrainingConfig, env, model, model_spec, step: int, tracker: RunLogger,
              suite: SuiteTokens | None) -> None:
    model.eval()
    values = {}
    if config.data.validation:     # the variant's own split: a training signal, not a comparison across data
        loss = validation_loss(model, config.data.validation, model_spec.seq_len, config.micro_batch_size,
                               config.eval.batches, env.rank, env.world_size, env.device)
        values = {"val_loss": round(loss, 6), "val_bpb": bits_per_byte(loss, config.data.bytes_per_token)}
    if suite is not None:          # the same held-out texts for every model: the comparison
        nll = suite_nll(model, suite, model_spec.seq_len, config.micro_batch_size, env.rank, env.world_size,
                        env.device)
        values |= {f"suite_bpb/{name}": round(value, 6) for name, value in bits_per_byte_by_domain(nll, suite).items()}
    _log(env, {"event": "eval", "step": step, **values})
    tracker.metrics(step, values)
    if config.data.tokenizer:
        text = sample_continuations(model, config.data.tokenizer, config.eval.prompts, config.eval.sample_tokens,
                                    env.device)
        tracker.text(text, f"samples/step-{step:06d}.txt")
    model.train()


def _log(env, record: dict) -> None:
    if env.is_main:
        print(json.dumps(record), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="sluice trainer (run under torchrun)")
    parser.add_argument("config")
    parser.add_argument("--stop-after", type=int, help="stop after this step (tests: an interrupted run)")
    args = parser.parse_args(argv)
    die_with_launcher()
    train(load_training_config(args.config), args.stop_after)
    return 0


def _leave(status: int) -> None:
    """End a finished rank without the interpreter's teardown. The run is over: its checkpoint and MLflow run are
    written and closed, its process group destroyed. The teardown's full garbage collections over every object
    torch, MLflow and pydantic made took about 2 s per rank, and the C++ destructors it runs sometimes aborted a
    rank whose training had finished ("terminate called without an active exception", SIGABRT: about one 2-rank
    run in 20 under the test suite), which failed the run."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    _leave(main())          # an error still goes the usual way: its traceback printed, exit status 1
