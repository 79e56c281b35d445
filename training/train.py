"""The trainer, one process per rank under torchrun:

    torchrun --nproc-per-node 2 -m training.train configs/train.yaml [--stop-after N]

The loop reads like the algorithm: data, forward, backward (accumulated), clip, step, log, checkpoint.
Parallelism (training/parallel.py), checkpoints (training/checkpoint.py), optimizer and schedule
(training/optim.py) live in their own modules. Each optimizer step prints one JSON line on rank 0.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from configs.tokenizer import EOS_ID
from configs.training import TrainingConfig, load_training_config
from tracking.params import flatten
from tracking.run_logger import RunLogger
from training.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from training.evaluate import bits_per_byte, sample_continuations, validation_loss
from training.exact_bpb import SuiteTokens, bits_per_byte_by_domain, load_suite, suite_nll
from training.model import Transformer
from training.noise_scale import NoiseScale
from training.optim import build_optimizer, learning_rate
from training.parallel import all_reduce_mean, init_distributed, shard_model
from training.plan import PEAK_FLOPS, model_config, plan
from training.sequences import TokenSequences
from training.spikes import SpikeDetector


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
    tracker = RunLogger(config, enabled=env.is_main)
    tracker.params(flatten("", config.model_dump(mode="json")) | {"plan.parameters": str(figures["parameters"]),
                                                                 "plan.tokens_per_update": str(figures["tokens_per_update"])})
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
    data = TokenSequences(config.data.train, model_spec.seq_len, config.data.seed, env.rank, env.world_size)
    data.check_vocabulary(model_spec.vocab_size)
    per_update = config.micro_batch_size * config.grad_accumulation
    if data.windows_per_rank < per_update:
        raise ValueError(f"the training shards give each of {env.world_size} ranks {data.windows_per_rank} "
                         f"sequences of {model_spec.seq_len} tokens, fewer than one update needs "
                         f"({config.micro_batch_size} x {config.grad_accumulation} accumulation): more data, a "
                         f"smaller batch or a shorter seq_len")
    model = shard_model(Transformer(model_spec).to(env.device), env.device,
                        bf16=config.hardware.dtype == "bf16" and env.device.type == "cuda",
                        activation_checkpointing=config.hardware.activation_checkpointing,
                        compile_blocks=config.hardware.compile)
    optimizer = build_optimizer(model, config.optimizer)
    spikes = SpikeDetector(config.spikes)
    micro = config.micro_batch_size * env.world_size
    noise = NoiseScale(micro, micro * config.grad_accumulation) if config.grad_accumulation > 1 else None
    suite = load_suite(config.eval.suite, config.data.tokenizer, EOS_ID, model_spec.seq_len) \
        if config.eval.suite else None
    step = attempt = 0
    resume = latest_checkpoint(config.checkpoint.dir)
    if resume:
        restored = load_checkpoint(resume, model, optimizer, env.rank)
        step, attempt = restored["step"], restored["trainer"]["attempt"]
        data.load_state_dict(restored["trainer"]["data"])
        spikes.load_state_dict(restored["trainer"]["spikes"])
        if noise:
            noise.load_state_dict(restored["trainer"]["noise"])
        _log(env, {"event": "resumed", "checkpoint": resume, "step": step})

    while step < total_steps:
        started = time.perf_counter()
        attempt += 1
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, total_steps, config.optimizer)
        losses, first_sq = [], None
        for micro_step in range(config.grad_accumulation):
            inputs, targets = (torch.from_numpy(array).to(env.device) for array in
                               data.next_batch(config.micro_batch_size))
            if attempt in config.spikes.inject_bad_batches:
                targets = torch.randint(0, model_spec.vocab_size, targets.shape, device=env.device)
            loss, cross_entropy = loss_function(model(inputs), targets, config.optimizer.z_loss)
            (loss / config.grad_accumulation).backward()
            losses.append(cross_entropy.item())
            if noise and micro_step == 0:           # the first micro-batch's gradient, averaged over the ranks
                first_sq = (_gradient_norm(model) * config.grad_accumulation) ** 2
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.optimizer.grad_clip or math.inf)
        loss_value = all_reduce_mean(sum(losses) / len(losses), env.device)   # the same on every rank
        if not math.isfinite(loss_value):
            raise NonFiniteLoss(f"loss is {loss_value} at step {step + 1} (update attempt {attempt}); the last good "
                                f"checkpoint is {latest_checkpoint(config.checkpoint.dir) or 'none (no step saved)'}: "
                                f"lower optimizer.lr or enable grad_clip, then rerun to resume from it")
        spike = config.spikes.enabled and spikes.is_spike(loss_value)
        rollback = spikes.record(loss_value, spike)
        if spike:                                   # skip the update; after repeated spikes, roll back
            optimizer.zero_grad(set_to_none=True)
            _log(env, {"event": "spike_skipped", "attempt": attempt, "step": step, "loss": round(loss_value, 6)})
            tracker.metrics(step, {"spike_loss": loss_value})
            if rollback and (good := latest_checkpoint(config.checkpoint.dir)):
                step = load_checkpoint(good, model, optimizer, env.rank)["step"]   # data goes on: batches skipped
                spikes.consecutive = 0
                _log(env, {"event": "rollback", "attempt": attempt, "checkpoint": good, "step": step})
            continue
        total_norm = _full(grad_norm)
        b_noise = noise.update(first_sq, total_norm ** 2) if noise else None
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        seconds = time.perf_counter() - started
        tokens = config.micro_batch_size * model_spec.seq_len * config.grad_accumulation * env.world_size
        record = {"loss": round(loss_value, 6), "lr": optimizer.param_groups[0]["lr"],
                  "grad_norm": round(total_norm, 6), "b_noise": round(b_noise, 3) if b_noise else None,
                  "tokens_per_s": round(tokens / seconds, 1),
                  "mfu": round(flops_per_token * tokens / seconds / (peak * env.world_size), 4) if peak else None}
        _log(env, {"step": step, **record})
        tracker.metrics(step, record)
        if step % config.log_every == 0:
            tracker.flush()
        if (config.data.validation or suite is not None) and (step % config.eval.every == 0 or step == total_steps):
            _evaluate(config, env, model, model_spec, step, tracker, suite)
        if step % config.checkpoint.every == 0 or step == total_steps:
            save_checkpoint(config.checkpoint.dir, step, model, optimizer,
                            {"data": data.state_dict(), "spikes": spikes.state_dict(), "attempt": attempt,
                             "noise": noise.state_dict() if noise else None}, env.rank)
        if stop_after is not None and step >= stop_after:
            tracker.flush()
            return
    if noise and noise.gradient_sq:
        sequences = micro * config.grad_accumulation
        b_noise = noise.trace / noise.gradient_sq
        _log(env, {"event": "noise_scale", "b_noise": round(b_noise, 3), "batch_sequences": sequences})
        tracker.text(f"gradient noise scale B_noise = {b_noise:.1f} sequences; configured batch {sequences} "
                     f"sequences ({sequences / b_noise:.2f}x B_noise)\n", "noise_scale.txt")
    tracker.text(json.dumps(model_spec.to_dict(), indent=2), "model_config.json")
    final = latest_checkpoint(config.checkpoint.dir)
    if final and env.is_main:
        tracker.artifacts(final, "checkpoint")
    tracker.finish()


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


def _full(norm) -> float:
    """A norm as a float (FSDP2 returns a DTensor)."""
    return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)


def _gradient_norm(model) -> float:
    return _full(torch.nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None]))


def _log(env, record: dict) -> None:
    if env.is_main:
        print(json.dumps(record), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="sluice trainer (run under torchrun)")
    parser.add_argument("config")
    parser.add_argument("--stop-after", type=int, help="stop after this step (tests: an interrupted run)")
    args = parser.parse_args(argv)
    train(load_training_config(args.config), args.stop_after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
