"""Where a training step's device time goes, beside benchmarks/gpu_check.py (which times the whole trainer).

    python3 benchmarks/gpu_profile.py --out DIR                    # on a GPU machine, after gpu_check.sh
    .venv/bin/python benchmarks/gpu_profile.py --device cpu --out DIR   # tiny sizes (a test runs it)

One process builds the 124M preset as the trainer does (`training.parallel.shard_model`: FSDP2 with bf16 mixed
precision, each block compiled), and runs steps of the trainer's loss (forward with targets), backward and fused
AdamW on random tokens: the model's own step, without data loading, logging or the trainer's bookkeeping. After
warm-up it times `--steps` steps with CUDA events (tokens/s and MFU, counted as `sluice plan` counts FLOPs) and
profiles three more with torch.profiler. Writes `gpu_profile.json` (the step time, and device time by kernel family:
matmuls, attention, compiled (Triton) kernels, other element-wise kernels, the optimizer, collectives) and
`gpu_profile.txt` (the profiler's table of the kernels with the most device time).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.model import Transformer  # noqa: E402
from training.parallel import init_distributed, shard_model  # noqa: E402
from training.plan import PEAK_FLOPS  # noqa: E402
from training.shapes import PRESETS, parameter_count  # noqa: E402

SIZES = {"cuda": {"preset": "124M", "micro_batch": 64, "compile": True},
         "cpu": {"preset": "tiny", "micro_batch": 4, "compile": False}}
FAMILIES = (   # kernel name patterns, first match wins
    ("matmul", r"gemm|nvjet|cutlass|xmma|cublas|matmul|aten::(add)?b?mm$"), ("attention", r"flash|fmha|attention|sdpa"),
    ("optimizer", r"adam|multi_tensor|foreach"), ("collectives", r"nccl|all_gather|reduce_scatter|allreduce"),
    ("compiled", r"triton"), ("elementwise", r"."))
WARMUP_STEPS = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--micro-batch", type=int)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = SIZES[args.device] | ({"micro_batch": args.micro_batch} if args.micro_batch else {})
    result, kernels = profile(sizes, args.steps)
    result["command"] = f"python3 benchmarks/gpu_profile.py {' '.join(argv if argv is not None else sys.argv[1:])}"
    (args.out / "gpu_profile.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "gpu_profile.txt").write_text(kernels + "\n")
    print(json.dumps(result, indent=2))
    return 0


def profile(sizes: dict, steps: int) -> tuple[dict, str]:
    env = init_distributed()
    config = PRESETS[sizes["preset"]]
    torch.manual_seed(0)
    model = Transformer(config).to(env.device)
    model = shard_model(model, env.device, torch.bfloat16, compile_scope="blocks" if sizes["compile"] else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=env.device.type == "cuda")
    tokens = torch.randint(0, config.vocab_size, (sizes["micro_batch"], config.seq_len + 1), device=env.device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def step() -> None:
        loss, _ = model(inputs, targets, 1e-4)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(WARMUP_STEPS):
        step()
    seconds = [timed(step, env.device) for _ in range(steps)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            *([torch.profiler.ProfilerActivity.CUDA] if env.device.type == "cuda"
                                              else [])]) as profiler:
        for _ in range(3):
            step()
        if env.device.type == "cuda":
            torch.cuda.synchronize()
    averages = profiler.key_averages()
    on_device = env.device.type == "cuda"
    families = device_time_by_family(averages, on_device)
    step_s = statistics.median(seconds)
    tokens_per_s = sizes["micro_batch"] * config.seq_len / step_s
    flops_per_token = 6 * parameter_count(config) + 12 * config.n_layers * config.d_model * config.seq_len
    kind = next((name for name in ("h100", "h200") if on_device and name in torch.cuda.get_device_name(0).lower()),
                None)
    peak = PEAK_FLOPS.get((kind, "bf16"))
    result = {"device": torch.cuda.get_device_name(0) if on_device else "cpu", "torch": torch.__version__,
              "model": sizes["preset"], "micro_batch": sizes["micro_batch"], "compile": sizes["compile"],
              "step_ms": round(step_s * 1000, 2), "tokens_per_s": round(tokens_per_s, 1),
              "mfu": round(flops_per_token * tokens_per_s / peak, 4) if peak else None,
              "ideal_step_ms": round(flops_per_token * sizes["micro_batch"] * config.seq_len / peak * 1000, 2)
              if peak else None,
              "device_ms_per_step_by_family": {name: round(ms / 3, 2) for name, ms in families.items()},
              "peak_memory_gb": round(torch.cuda.max_memory_allocated() / 1e9, 3) if on_device else None}
    sort_key = "self_cuda_time_total" if on_device else "self_cpu_time_total"
    torch.distributed.destroy_process_group()
    return result, averages.table(sort_by=sort_key, row_limit=30, max_name_column_width=90)


def timed(step, device: torch.device) -> float:
    if device.type != "cuda":
        started = time.perf_counter()
        step()
        return time.perf_counter() - started
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    step()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000


def device_time_by_family(averages, on_device: bool) -> dict[str, float]:
    """Milliseconds of the profiled steps in each kernel family (CPU operators' own time where there is no GPU)."""
    totals = dict.fromkeys((name for name, _ in FAMILIES), 0.0)
    for event in averages:
        if on_device and str(getattr(event, "device_type", "")).endswith("CUDA"):
            micros = event.self_device_time_total
        elif not on_device and not event.key.startswith("ProfilerStep"):
            micros = event.self_cpu_time_total
        else:
            continue
        family = next(name for name, pattern in FAMILIES if re.search(pattern, event.key, re.IGNORECASE))
        totals[family] += micros / 1000
    return totals


if __name__ == "__main__":
    sys.exit(main())
