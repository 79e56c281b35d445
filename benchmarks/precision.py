"""fp32, bf16 and fp16 (dynamic loss scaling) trained from the same initial weights on the same batches: how far
each 16-bit format's loss curve runs from fp32's, and how many steps fp16 skipped on overflowing gradients.

    .venv/bin/python benchmarks/precision.py [--steps 120] [--loss-scale 65536]      # CPU, one rank, tiny model
    python3 benchmarks/precision.py --device cuda                                      # on a GPU: the 124M preset

Each run is the project's trainer under torchrun (benchmarks/gpu_check.py runs it); the gap is the largest
difference of 10-step mean losses, as the GPU check's bf16 figure. Writes results/precision.json.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.gpu_check import SMOOTHING_STEPS, Check, moving_mean  # noqa: E402
from benchmarks.harness import write_result  # noqa: E402

DTYPES = ("fp32", "bf16", "fp16")
HIGH_START = 2.0 ** 24


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--loss-scale", type=float, default=2.0 ** 16, help="fp16's starting loss scale")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "precision.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="precision-") as work:
        check = Check(args.device, Path(work), Path(work) / "runs.log")
        micro = check.sizes["precision_micro_batch"]
        runs = {dtype: check.train(check.sizes["model"], micro, args.steps,
                                   {"loss_scale": args.loss_scale} if dtype == "fp16" else {}, dtype=dtype,
                                   warmup=args.steps // 10) for dtype in DTYPES}
        # a scale too high to start from: the steps it skips while it halves, and what that costs the curve
        runs["fp16_high_start"] = check.train(check.sizes["model"], micro, args.steps, {"loss_scale": HIGH_START},
                                              dtype="fp16", warmup=args.steps // 10)
    errors = {dtype: run["error"] for dtype, run in runs.items() if "error" in run}
    if errors:
        raise SystemExit(f"runs failed: {errors}")
    curves = {dtype: moving_mean(run["losses"]) for dtype, run in runs.items()}
    result = {"model": check.sizes["model"], "micro_batch": micro, "steps": args.steps,
              "fp16_initial_loss_scale": args.loss_scale,
              "max_gap_vs_fp32": {name: round(max(abs(a - b) for a, b in zip(curves[name], curves["fp32"])), 6)
                                  for name in runs if name != "fp32"},
              "final_loss": {name: round(statistics.fmean(run["losses"][-SMOOTHING_STEPS:]), 6)
                             for name, run in runs.items()},
              "skipped_steps": {name: runs[name]["skipped_steps"] for name in ("fp16", "fp16_high_start")},
              "final_loss_scale": {name: runs[name]["loss_scale"] for name in ("fp16", "fp16_high_start")},
              "fp16_high_start_loss_scale": HIGH_START,
              "tokens_per_s": {dtype: run["tokens_per_s"] for dtype, run in runs.items()}}
    written = write_result(args.out, result, "precision.py", argv)
    print({key: written[key] for key in ("max_gap_vs_fp32", "final_loss", "skipped_steps")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
