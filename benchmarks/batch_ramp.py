"""The batch-size ramp at matched tokens (issue 18, part 4): the same model, data and token budget trained with the
full batch from the start, with a linear and a stepwise ramp, and with the ramp the noise scale decides, over
several seeds; the final validation loss of each against the seed spread.

    .venv/bin/python benchmarks/batch_ramp.py [--tokens 131072] [--seeds 0,1,2]

Each run is a one-point sweep (`flows.sweep`, so MLflow has every run) on the bench corpus's demo-recipe mixture
(benchmarks/training_science.py's data): d_model 64, 2 layers, 2 CPU ranks x micro-batch 2 x accumulation 8 =
32 sequences of 64 tokens per full update; the fixed ramps reach it after a quarter of the tokens, from one
micro-batch, with the learning rate scaled by the square root of the batch fraction. Writes
`results/batch_ramp.json`.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import RESULTS, bench_env, ensure_corpus, log, write_result  # noqa: E402
from benchmarks.training_science import bench_sweep  # noqa: E402

MODEL = {"d_model": 64, "n_layers": 2, "n_heads": 4}
BATCH = {"micro_batch_size": 2, "grad_accumulation": 8}


def variants(tokens: int) -> dict[str, dict]:
    fixed = {"start_accumulation": 1, "tokens": tokens // 4, "lr_scaling": "sqrt"}
    return {"full_batch": {"schedule": "none"},
            "linear": {"schedule": "linear", **fixed},
            "stepwise": {"schedule": "stepwise", **fixed},
            "noise_scale": {"schedule": "noise_scale", "start_accumulation": 2, "check_every": 4,
                            "lr_scaling": "sqrt"}}


def train_variant(corpus: Path, name: str, ramp: dict, tokens: int, seed: int) -> dict:
    import mlflow

    from flows.sweep import sweep_flow

    sweep = bench_sweep(corpus, [tokens], {"name": f"batch-ramp-{name}-s{seed}-demo", "models": [MODEL]})
    sweep = sweep.model_copy(update={"train": sweep.train.model_copy(update={
        **BATCH, "seed": seed, "batch_ramp": sweep.train.batch_ramp.model_copy(update=ramp),
        "data": sweep.train.data.model_copy(update={"seed": seed})})})
    started = time.perf_counter()
    result = sweep_flow(sweep)
    (run,) = result["runs"]
    client = mlflow.MlflowClient(result["mlflow_tracking_uri"])
    batches = [int(metric.value) for metric in sorted(client.get_metric_history(run["mlflow_run_id"],
                                                                                 "batch_sequences"),
                                                       key=lambda metric: metric.step)]
    return {"val_loss": run["val_loss"], "updates": len(batches), "batch_sequences": batches,
            "wall_seconds": round(time.perf_counter() - started, 1), "mlflow_run_id": run["mlflow_run_id"]}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=131072)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", type=Path, default=RESULTS / "batch_ramp.json")
    args = parser.parse_args(argv)
    os.environ.update(bench_env())
    corpus, origin = ensure_corpus()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    runs = {name: {seed: train_variant(corpus, name, ramp, args.tokens, seed) for seed in seeds}
            for name, ramp in variants(args.tokens).items()}
    summary = {}
    for name, by_seed in runs.items():
        losses = [run["val_loss"] for run in by_seed.values()]
        summary[name] = {"val_loss_mean": round(statistics.mean(losses), 5),
                         "val_loss_std": round(statistics.stdev(losses), 5) if len(losses) > 1 else None,
                         "updates": sorted({run["updates"] for run in by_seed.values()})}
        log(f"{name}: val loss {summary[name]['val_loss_mean']} +- {summary[name]['val_loss_std']}, "
            f"updates {summary[name]['updates']}")
    baseline = summary["full_batch"]
    noise = max(entry["val_loss_std"] or 0 for entry in summary.values())
    report = {"corpus": origin, "tokens": args.tokens, "seeds": seeds, "model": MODEL, "batch": BATCH | {"ranks": 2},
              "ramps": variants(args.tokens), "summary": summary,
              "val_loss_change_vs_full_batch": {name: round(entry["val_loss_mean"] - baseline["val_loss_mean"], 5)
                                                for name, entry in summary.items() if name != "full_batch"},
              "seed_std": noise,
              "runs": {name: {str(seed): run for seed, run in by_seed.items()} for name, by_seed in runs.items()}}
    write_result(args.out, report, "batch_ramp.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
