"""`sluice plan`: the quantitative review of a training run before launch.

Formulas, and where they come from:
- FLOPs per token = 6N + 12 * layers * d_model * seq_len (PaLM, appendix B: the MFU definition); N counts every
  parameter once (the tied embedding is the output projection's matmul).
- Memory per rank (ZeRO, Rajbhandari et al. 2020): bf16 mixed precision keeps 2 bytes of parameters, 2 of
  gradients and 12 of optimizer state (fp32 master, Adam m and v) per parameter; fp32 keeps 4 + 4 + 8.
  ZeRO-1 shards the optimizer state over the data-parallel ranks, ZeRO-2 also the gradients, ZeRO-3 (FSDP)
  also the parameters. With gradient accumulation the trainer reduces gradients once per update, so between
  micro-batches each rank holds its unsharded gradients (ZeRO-2 and 3; fp32, FSDP2 accumulates them in the
  reduction's dtype) and parameters (ZeRO-3, in compute dtype). Tensor parallelism splits the model over its
  ranks first, and pipeline parallelism into stages: each data-parallel rank's state is that of parameters /
  (tensor_parallel x pipeline_parallel); a pipeline's micro-batches are its accumulation (the stages reduce once).
- Activations per rank under a layout (`in_flight`): a pipeline rank holds its n_layers / pipeline_parallel layers'
  activations for each micro-batch in flight, of micro_batch_size / microbatches sequences: GPipe all m, 1F1B at
  most p on the first rank (which holds the most), interleaved 1F1B and zero bubble p + (p - 1) / v of its layers'
  share (Narayanan et al. 2021, its first rank's warm-up), each at most m; plus one micro-batch's loss (on the last rank: an upper
  bound for every rank). Tensor parallelism with sequence parallelism divides every activation by tensor_parallel.
- Activations per layer: what one block of this model keeps for its backward pass, counted from autograd's saved
  tensors (`layer_bytes_per_element`: eager 52 + 8 F bytes per element of its input in bf16, compiled 20 + 6 F,
  F = ffn_dim / d_model; Korthikanti et al. 2022 count 34 for GPT's block), doubled in fp32; with activation
  checkpointing each layer's input (2 bytes per element) plus one layer recomputed; plus the loss's
  (`loss_bytes`: it computes the logits a chunk of rows at a time, so their whole (tokens, vocab) array is never
  held).
- Pipeline bubble (GPipe / 1F1B) = (p - 1) / (m + p - 1) for p ranks and m micro-batches; with v stages per rank
  (interleaved 1F1B, Narayanan et al. 2021) (p - 1) / (v m + p - 1); zero bubble (Qi et al. 2024, the backward
  split into input and weight passes as long as the forward) (p - 1) / (3 v m + p - 1). Ring all-reduce = 2 (n - 1) / n * gradient bytes /
  bandwidth. Checkpoint = fp32 parameters + Adam m and v = 12 bytes per parameter.
- Chinchilla (Hoffmann et al. 2022): C = 6 N D with D = 20 N, so N_opt = sqrt(C / 120).
- With inference tokens T: the N and D that reach the run's loss under a scaling law L(N, D) with the fewest
  training plus inference FLOPs (training.sizing, Sardana et al. 2024), beside the Chinchilla-optimal pair. The
  law is a fitted one (`sluice scaling fit` writes it) or Chinchilla's own (approach 3) by default.
"""
from __future__ import annotations

import math

import psutil

from configs.training import HardwareSpec, TrainingConfig
from training.batch_ramp import BatchRamp
from training.scaling_law import CHINCHILLA, ScalingLaw
from training.shapes import CHUNK_ELEMENTS, ModelConfig, parameter_count
from training.sizing import size_for_lifetime

# Dense peak FLOP/s per device and dtype (vendor data sheets); CPU has no entry: tokens/s only.
PEAK_FLOPS = {("h100", "bf16"): 989e12, ("h200", "bf16"): 989e12, ("a100-40gb", "bf16"): 312e12,
              ("a100-80gb", "bf16"): 312e12, ("h100", "fp16"): 989e12, ("h200", "fp16"): 989e12,
              ("a100-40gb", "fp16"): 312e12, ("a100-80gb", "fp16"): 312e12, ("h100", "fp32"): 67e12,
              ("h200", "fp32"): 67e12, ("a100-40gb", "fp32"): 19.5e12, ("a100-80gb", "fp32"): 19.5e12}
DEVICE_MEMORY_GB = {"h100": 80, "h200": 141, "a100-40gb": 40, "a100-80gb": 80}
STATE_BYTES = {"bf16": (2, 2, 12), "fp16": (2, 2, 12), "fp32": (4, 4, 8)}   # parameters, gradients, optimizer
ACTIVATION_BYTES = {"eager": (52, 8), "compiled": (20, 6)}  # per element: base + per_ffn * ffn_dim / d_model
GB = 1e9
DEFAULT_STEPS = 100


class PlanRefused(ValueError):
    """The run does not fit the device; the message has the numbers."""


def model_config(config: TrainingConfig) -> ModelConfig:
    return ModelConfig(**config.model.shape())


def memory_per_rank(n_params: int, dtype: str, ranks: int, accumulation: int = 1) -> dict[str, dict[str, float]]:
    """Bytes of parameters, gradients and optimizer state on one rank under each sharding, and what accumulating
    micro-batches holds unsharded until the update's one reduction (`accumulation`)."""
    params, grads, optimizer = (n_params * size for size in STATE_BYTES[dtype])
    shard = {"none": (1, 1, 1), "zero1": (1, 1, ranks), "zero2": (1, ranks, ranks), "zero3": (ranks, ranks, ranks)}
    held_grads = n_params * 4                   # the unsharded gradients accumulate in fp32
    return {name: {"parameters": params / p, "gradients": grads / g, "optimizer": optimizer / o,
                   "accumulation": ((params - params / p) + (held_grads - held_grads / g)) if accumulation > 1
                   else 0.0}
            for name, (p, g, o) in shard.items()}


def activation_bytes(model: ModelConfig, micro_batch: int, dtype: str, checkpointing: bool, compiled: bool,
                     hardware: HardwareSpec | None = None) -> float:
    """Peak bytes of activations on one rank: every layer's kept tensors and the loss's chunk, or with checkpointing
    each layer's input, plus the larger of one layer recomputed and the loss's chunk (they are not alive together).
    Under `hardware`'s layout: a pipeline rank's layers for the micro-batches in flight, divided by tensor_parallel."""
    layers, held, sequences, divided = model.n_layers, 1.0, micro_batch, 1
    if hardware is not None:
        divided = hardware.tensor_parallel
        if hardware.pipeline_parallel > 1:
            layers //= hardware.pipeline_parallel
            held, sequences = in_flight(hardware), micro_batch / hardware.pipeline_microbatches
    elements = model.seq_len * sequences * model.d_model
    scale = 2 if dtype == "fp32" else 1
    layer = layer_bytes_per_element(model, compiled) * elements * scale
    chunk, kept = loss_bytes(model, sequences, scale)
    if checkpointing:
        return (layers * held * 2 * elements * scale + max(layer, chunk) + kept) / divided
    return (layers * held * layer + chunk + kept) / divided


def in_flight(hardware: HardwareSpec) -> float:
    """Micro-batches whose activations the first pipeline rank holds at once, counted over its layers."""
    ranks, microbatches = hardware.pipeline_parallel, hardware.pipeline_microbatches
    interleaved = ranks + (ranks - 1) / hardware.stages_per_rank
    held = {"gpipe": microbatches, "1f1b": ranks, "interleaved_1f1b": interleaved, "zero_bubble": interleaved}
    return min(held.get(hardware.pipeline_schedule, ranks), microbatches)


def layer_bytes_per_element(model: ModelConfig, compiled: bool) -> float:
    """Bytes one block keeps for its backward pass per element of its (batch, seq, d_model) input in bf16, counted
    from autograd's saved tensors of a real block (tests/test_plan.py recounts them; on an H200 the measured peaks
    agree within 3%, results/gpu.json): eager keeps the norms' and rotary embedding's fp32 copies that the compiled
    block recomputes. Per row also each norm's fp32 reciprocal and attention's log-sum-exp: 8 + 12 * heads bytes.
    Counted by Korthikanti et al. (2022) for GPT's block, 34."""
    base, per_ffn = ACTIVATION_BYTES["compiled" if compiled else "eager"]
    return base + per_ffn * model.ffn_dim / model.d_model + (8 + 12 * model.n_heads) / model.d_model


def loss_bytes(model: ModelConfig, micro_batch: float, scale: int) -> tuple[float, float]:
    """What the chunked loss (training.loss) holds: while a chunk is made, its logits in compute dtype and fp32, its
    softmax gradient in fp32 and compute dtype; then the gradients it keeps for the backward pass, of the hidden
    states and of the tied weight (fp32 while summed over chunks, and in compute dtype)."""
    rows = model.seq_len * micro_batch
    chunk = min(rows, max(1, CHUNK_ELEMENTS // model.vocab_size)) * model.vocab_size
    return chunk * (2 * scale + 4 + 4 + 2 * scale), \
        rows * model.d_model * 2 * scale + model.vocab_size * model.d_model * (4 + 2 * scale)


def pipeline_bubble(hardware: HardwareSpec) -> float:
    """The idle share of a pipeline's ranks in one update. Zero bubble counts its forward, input-gradient and
    weight-gradient passes as equally long (Qi et al. 2024's analysis), a weight pass filling each third."""
    ranks, stages_per_rank = hardware.pipeline_parallel, hardware.stages_per_rank
    passes = 3 if hardware.pipeline_schedule == "zero_bubble" else 1
    return round((ranks - 1) / (passes * stages_per_rank * hardware.pipeline_microbatches + ranks - 1), 4)


def plan(config: TrainingConfig, inference_tokens: float | None = None, law: ScalingLaw = CHINCHILLA,
         target_loss: float | None = None) -> dict:
    model = model_config(config)
    hardware = config.hardware
    n_params = parameter_count(model)
    flops_per_token = 6 * n_params + 12 * model.n_layers * model.d_model * model.seq_len
    tokens_per_update = config.micro_batch_size * model.seq_len * config.grad_accumulation * hardware.data_parallel
    steps = config.steps or (math.ceil(config.tokens / tokens_per_update) if config.tokens else DEFAULT_STEPS)
    tokens = steps * tokens_per_update
    total_flops = flops_per_token * tokens
    tensor_share = n_params / hardware.tensor_parallel / hardware.pipeline_parallel     # a stage's share
    accumulation = hardware.pipeline_microbatches if hardware.pipeline_parallel > 1 else config.grad_accumulation
    states = memory_per_rank(tensor_share, hardware.dtype, hardware.data_parallel, accumulation)
    activations = {flag: activation_bytes(model, config.micro_batch_size, hardware.dtype, flag, hardware.compile,
                                          hardware) for flag in (False, True)}
    memory = {sharding: {**{k: round(v / GB, 3) for k, v in parts.items()},
                         "activations": round(activations[False] / GB, 3),
                         "total": round((sum(parts.values()) + activations[False]) / GB, 3),
                         "total_with_activation_checkpointing": round((sum(parts.values()) + activations[True]) / GB, 3)}
              for sharding, parts in states.items()}
    gradient_bytes = tensor_share * STATE_BYTES[hardware.dtype][1]
    ranks = hardware.data_parallel
    allreduce_seconds = 2 * (ranks - 1) / ranks * gradient_bytes / (hardware.interconnect_gb_per_s * GB) \
        if ranks > 1 else 0.0
    checkpoint_bytes = 12 * n_params
    chinchilla_params = math.sqrt(total_flops / 120)
    peak = PEAK_FLOPS.get((hardware.device, hardware.dtype))
    chosen = memory[hardware.sharding]
    planned_gb = chosen["total_with_activation_checkpointing" if hardware.activation_checkpointing else "total"]
    return {
        "model": model.to_dict(), "parameters": n_params,
        "flops_per_token": flops_per_token, "flops_per_token_6n": 6 * n_params,
        "tokens_per_update": tokens_per_update, "steps": steps, "tokens": tokens, "total_flops": total_flops,
        "tokens_per_parameter": round(tokens / n_params, 2),
        "memory_gb_per_rank": memory, "planned_memory_gb_per_rank": planned_gb,
        "device_memory_gb": DEVICE_MEMORY_GB.get(hardware.device),
        "host_memory_gb": round(psutil.virtual_memory().total / GB, 1) if hardware.device == "cpu" else None,
        "ranks_per_host": math.ceil(hardware.ranks / hardware.nodes),
        "pipeline_bubble_fraction": pipeline_bubble(hardware),
        "allreduce_seconds_per_update": round(allreduce_seconds, 4),
        "checkpoint_gb": round(checkpoint_bytes / GB, 3),
        "checkpoint_write_seconds": round(checkpoint_bytes / (hardware.checkpoint_write_gb_per_s * GB), 2),
        "chinchilla_optimal_parameters": round(chinchilla_params), "chinchilla_optimal_tokens": round(20 * chinchilla_params),
        "peak_flops_per_device": peak,
        "expected_wall_hours": round(total_flops / (peak * hardware.ranks * hardware.assumed_mfu) / 3600, 3) if peak
        else None,
        "updates": BatchRamp(config.batch_ramp, config.grad_accumulation, config.micro_batch_size * ranks,
                             model.seq_len).planned_updates(tokens),
    } | ({"lifetime": lifetime(n_params, tokens, inference_tokens, law, target_loss)}
         if inference_tokens is not None else {})


def lifetime(n_params: int, tokens: int, inference_tokens: float, law: ScalingLaw, target_loss: float | None) -> dict:
    """The configured run's training plus inference FLOPs beside the inference-aware and Chinchilla-optimal
    sizes for the same loss (the law's loss at this run's N and D unless a target is given)."""
    loss = target_loss if target_loss is not None else float(law.loss(n_params, tokens))
    configured = {"n_params": n_params, "tokens": tokens, "training_flops": 6 * n_params * tokens,
                  "inference_flops": 2 * n_params * inference_tokens}
    configured["total_flops"] = configured["training_flops"] + configured["inference_flops"]
    return size_for_lifetime(law, loss, inference_tokens) | {"configured": configured, "law": law.to_dict()}


def check_fits(result: dict) -> None:
    """Refuse a run whose planned memory per rank exceeds the device's or, on CPU, whose ranks on one host together
    exceed this machine's memory (the plan's `host_memory_gb`)."""
    per_rank, limit, host = result["planned_memory_gb_per_rank"], result["device_memory_gb"], result["host_memory_gb"]
    if limit is not None and per_rank > limit:
        raise PlanRefused(f"planned memory per rank {per_rank:.1f} GB exceeds the device's {limit} GB: "
                          f"{result['memory_gb_per_rank']}")
    ranks = result["ranks_per_host"]
    if host is not None and per_rank * ranks > host:
        raise PlanRefused(f"planned memory per rank {per_rank:.1f} GB x {ranks} ranks on one host = "
                          f"{per_rank * ranks:.1f} GB exceeds this machine's {host} GB of memory")


def plan_text(result: dict) -> str:
    """The plan as a person reads it."""
    model = result["model"]
    lines = [f"model: {result['parameters'] / 1e6:.1f}M parameters ({model['n_layers']} layers, d_model "
             f"{model['d_model']}, {model['n_heads']} heads, vocab {model['vocab_size']}, seq {model['seq_len']})",
             f"FLOPs per token: {result['flops_per_token']:.3e} (6N = {result['flops_per_token_6n']:.3e}, the rest "
             f"attention)",
             f"batch: {result['tokens_per_update']:,} tokens per update; {result['steps']:,} updates = "
             f"{result['tokens']:,} tokens ({result['tokens_per_parameter']} per parameter); "
             f"{result['total_flops']:.3e} FLOPs",
             *_ramp_lines(result),
             f"Chinchilla-optimal for this compute: {result['chinchilla_optimal_parameters'] / 1e6:.1f}M parameters, "
             f"{result['chinchilla_optimal_tokens']:,} tokens",
             "memory per rank, GB (params / grads / optimizer / held while accumulating / activations = total; with "
             "activation checkpointing):"]
    for sharding, parts in result["memory_gb_per_rank"].items():
        lines.append(f"  {sharding:6} {parts['parameters']:.3f} / {parts['gradients']:.3f} / {parts['optimizer']:.3f} "
                     f"/ {parts['accumulation']:.3f} / {parts['activations']:.3f} = {parts['total']:.3f}; {parts['total_with_activation_checkpointing']:.3f}")
    memory = f"{result['device_memory_gb']} GB" if result["host_memory_gb"] is None else \
        f"this machine's {result['host_memory_gb']} GB for {result['ranks_per_host']} ranks on one host"
    lines += [f"planned per rank: {result['planned_memory_gb_per_rank']} GB of {memory}",
              f"pipeline bubble: {result['pipeline_bubble_fraction']:.1%}; ring all-reduce per update: "
              f"{result['allreduce_seconds_per_update']} s; checkpoint {result['checkpoint_gb']} GB, written in "
              f"{result['checkpoint_write_seconds']} s",
              f"expected wall time: {result['expected_wall_hours']} h at the assumed MFU" if result["expected_wall_hours"]
              is not None else "expected wall time: no FLOP/s peak for CPU; the trainer reports tokens/s"]
    if "lifetime" in result:
        lines += _lifetime_lines(result["lifetime"])
    return "\n".join(lines)


def _ramp_lines(result: dict) -> list[str]:
    if result["updates"] == result["steps"]:
        return []
    taken = f"{result['updates']:,} updates, the first ones smaller" if result["updates"] \
        else "as many updates as the noise scale decides"
    return [f"batch ramp: the same tokens in {taken}; the LR schedule counts full-batch updates"]


def _lifetime_lines(sizes: dict) -> list[str]:
    law = sizes["law"]
    lines = [f"lifetime cost at loss {sizes['loss']:.4f} with {sizes['inference_tokens']:.3g} inference tokens "
             f"(law E {law['E']:.4g}, A {law['A']:.4g}, B {law['B']:.4g}, alpha {law['alpha']:.3f}, "
             f"beta {law['beta']:.3f}):"]
    for name in ("configured", "chinchilla_optimal", "inference_aware"):
        size = sizes[name]
        lines.append(f"  {name.replace('_', ' '):19} {size['n_params'] / 1e6:10.2f}M parameters, "
                     f"{size['tokens']:.3e} tokens ({size['tokens'] / size['n_params']:.0f} per parameter); "
                     f"FLOPs {size['training_flops']:.3e} training + {size['inference_flops']:.3e} inference = "
                     f"{size['total_flops']:.3e}")
    lines.append(f"  inference-aware sizing saves {sizes['saving']:.2%} of the Chinchilla-optimal model's "
                 f"lifetime FLOPs")
    return lines
