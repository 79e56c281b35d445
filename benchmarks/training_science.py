"""Sizing and diagnosing runs (issue 18): a scaling ladder trained for real, the L(N, D) fit over it, the fit's
recovery of a known law, and `sluice doctor` on the ladder's runs with faults injected.

    .venv/bin/python benchmarks/training_science.py [--tokens 32768,65536,131072] [--corpus bench|small]

- The ladder: `configs/ladder.yaml`'s 4 model sizes x `--tokens` budgets on the demo recipe's mixture of the bench
  corpus (`sluice corpus --size bench --seed 0`, built once under benchmarks/_work/), 2 CPU ranks.
- The fit: Chinchilla's approach 3 with bootstrap intervals; `fit_holdout_rel_error` is the largest relative error
  of the largest model's losses predicted by the law fitted without it.
- Synthetic recovery: Chinchilla's published law on a 6 x 5 grid (10M-10B parameters, 1B-1T tokens) with 0.1%
  multiplicative noise, 3 seeds: the largest relative error of any parameter.
- μP: the learning-rate grid 2e-3 to 3.2e-2 (factors of 2) at widths 32, 64 and 128, standard and μP (base width
  32), 32,768 tokens a run; the best rate's shift across widths in grid steps; and the coordinate check (mean
  |coordinate| per layer after 4 Adam steps, widths 32-256) with its chart `results/mup_coord_check.png`.
- The doctor: every ladder run as it was tracked (a finding there is a false finding: the runs are healthy), and
  each drill (dev.doctor_drills) injected into the longest run's real history, which must be found alone.
Writes `results/training_science.json`.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (RESULTS, ROOT, WORK, bench_env, ensure_corpus, generated_corpus, goal, log,  # noqa: E402
                                write_result)

SYNTHETIC_NOISE, SYNTHETIC_SEEDS = 0.001, (0, 1, 2)
TRANSFER_WIDTHS = [32, 64, 128]
TRANSFER_RATES = [2e-3, 4e-3, 8e-3, 1.6e-2, 3.2e-2]     # one grid step = a factor of 2
TRANSFER_TOKENS = 32768
COORD_WIDTHS = [32, 64, 128, 256]


def bench_sweep(corpus: Path, tokens: list[int], changes: dict | None = None):
    from configs.sweep import parse_sweep

    raw = yaml.safe_load((ROOT / "configs" / "ladder.yaml").read_text()) | (changes or {})
    recipe = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    recipe |= {"name": "ladder-bench", "store": str(WORK / "ladder-store"),
               "input": {"paths": [str(corpus / "warc")], "source": "cc-sluice-bench"}}
    raw |= {"name": raw["name"].replace("demo", "bench"), "recipe": recipe, "tokens": tokens, "origin": str(ROOT),
            "mlflow": {"experiment": "sluice-ladder-bench", "tracking_uri": f"sqlite:///{WORK}/ladder-mlflow.db"}}
    return parse_sweep(raw, origin="benchmarks/training_science.py")


def learning_rate_transfer(corpus: Path, parametrization: str) -> dict:
    """The same learning-rate grid at three widths (base width 32 under μP): the best rate per width, and how
    many grid steps it moves across widths."""
    from flows.sweep import sweep_flow

    models = [{"d_model": width, "n_layers": 2, "n_heads": 4, "parametrization": parametrization,
               "base_width": TRANSFER_WIDTHS[0]} for width in TRANSFER_WIDTHS]
    sweep = bench_sweep(corpus, [TRANSFER_TOKENS], {"name": f"lr-transfer-{parametrization}-demo", "models": models,
                                                    "learning_rates": TRANSFER_RATES})
    runs = sweep_flow(sweep)["runs"]
    losses = {width: {run["lr"]: run["val_loss"] for run in runs if run["n_params"] == size}
              for width, size in zip(TRANSFER_WIDTHS, sorted({run["n_params"] for run in runs}))}
    best = {width: min(by_rate, key=by_rate.get) for width, by_rate in losses.items()}
    steps = [TRANSFER_RATES.index(rate) for rate in best.values()]
    return {"losses": {str(width): {f"{rate:g}": loss for rate, loss in by_rate.items()}
                       for width, by_rate in losses.items()},
            "best_lr": {str(width): rate for width, rate in best.items()}, "shift_steps": max(steps) - min(steps)}


def coordinate_check() -> dict:
    from dataclasses import replace

    from training.coord_check import coord_check_png, coordinate_sizes, width_slopes
    from training.shapes import PRESETS

    base = replace(PRESETS["tiny"], vocab_size=256, seq_len=32)
    sizes = {name: coordinate_sizes(replace(base, parametrization=name, base_width=COORD_WIDTHS[0]), COORD_WIDTHS)
             for name in ("sp", "mup")}
    chart = coord_check_png(sizes, str(RESULTS / "mup_coord_check.png"))
    return {"widths": COORD_WIDTHS, "slopes": {name: width_slopes(by_width) for name, by_width in sizes.items()},
            "chart": str(Path(chart).relative_to(ROOT))}


def synthetic_recovery() -> dict:
    from training.scaling_law import CHINCHILLA, fit_law

    n_params = np.repeat(np.geomspace(1e7, 1e10, 6), 5)
    tokens = np.tile(np.geomspace(1e9, 1e12, 5), 6)
    truth = CHINCHILLA.to_dict()
    errors = []
    for seed in SYNTHETIC_SEEDS:
        noise = np.exp(np.random.default_rng(seed).normal(0, SYNTHETIC_NOISE, len(n_params)))
        fitted = fit_law(n_params, tokens, CHINCHILLA.loss(n_params, tokens) * noise).to_dict()
        errors.append({name: abs(fitted[name] / truth[name] - 1) for name in truth})
    return {"noise": SYNTHETIC_NOISE, "seeds": list(SYNTHETIC_SEEDS),
            "max_rel_error_per_parameter": {name: round(max(error[name] for error in errors), 5) for name in truth},
            "max_rel_error": round(max(max(error.values()) for error in errors), 5)}


def doctor_on_ladder(run_ids: list[str], tracking: str) -> dict:
    import mlflow

    from flows.doctor import run_history
    from training.doctor import diagnose
    from dev.doctor_drills import FAULTS, MIN_STEPS, inject

    client = mlflow.MlflowClient(tracking)
    histories = {run_id: run_history(client, run_id) for run_id in run_ids}
    clean = {run_id: [finding.check for finding in diagnose(history)] for run_id, history in histories.items()}
    longest = max(histories, key=lambda run_id: histories[run_id].total_steps())
    if histories[longest].total_steps() < MIN_STEPS:
        raise SystemExit(f"the longest ladder run has {histories[longest].total_steps()} steps; drills need "
                         f"{MIN_STEPS}: raise --tokens")
    found = {fault: [finding.check for finding in diagnose(inject(histories[longest], fault))] for fault in FAULTS}
    return {"clean_findings": {run_id: checks for run_id, checks in clean.items() if checks},
            "false_findings": sum(len(checks) for checks in clean.values()),
            "drill_run": longest, "drill_run_steps": histories[longest].total_steps(),
            "found": found, "detected": {fault: fault in checks for fault, checks in found.items()},
            "found_alone": {fault: checks == [fault] for fault, checks in found.items()}}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", default="32768,65536,131072", help="the ladder's token budgets")
    parser.add_argument("--corpus", choices=("bench", "small"), default="bench")
    parser.add_argument("--out", type=Path, default=RESULTS / "training_science.json")
    args = parser.parse_args(argv)
    os.environ.update(bench_env())
    if args.corpus == "bench":
        corpus, origin = ensure_corpus()
    else:
        corpus, origin = generated_corpus(WORK / "small-corpus", "small", 0)
    from flows.sweep import sweep_flow

    sweep = bench_sweep(corpus, [int(value) for value in args.tokens.split(",")])
    started = time.perf_counter()
    result = sweep_flow(sweep)
    wall = time.perf_counter() - started
    log(f"ladder: {len(result['runs'])} runs in {wall:.0f} s")
    fit = result["fit"]
    recovery = synthetic_recovery()
    doctor = doctor_on_ladder([run["mlflow_run_id"] for run in result["runs"]], result["mlflow_tracking_uri"])
    holdout = fit["holdout"]["max_rel_error"] if fit and fit["holdout"] else None
    transfer = {name: learning_rate_transfer(corpus, name) for name in ("sp", "mup")}
    coordinates = coordinate_check()
    report = {
        "corpus": origin,
        "ladder": [{key: run.get(key) for key in ("n_params", "tokens", "lr", "val_loss", "loss", "mlflow_run_id")}
                   for run in result["runs"]],
        "ladder_models": sweep.models,
        "ladder_wall_seconds": round(wall, 1),
        "fit": fit and {"law": fit["law"], "intervals": fit["intervals"], "holdout": fit["holdout"],
                        "compute_optimal": fit["compute_optimal"], "warnings": fit["warnings"]},
        "fit_holdout_rel_error": holdout,
        "synthetic_recovery": recovery,
        "synthetic_recovery_max_rel_error": recovery["max_rel_error"],
        "doctor": doctor,
        "doctor_detected": doctor["detected"],
        "doctor_all_detected": int(all(doctor["found_alone"].values())),
        "doctor_false_findings_clean_run": doctor["false_findings"],
        "lr_transfer": {"widths": TRANSFER_WIDTHS, "learning_rates": TRANSFER_RATES, "tokens": TRANSFER_TOKENS,
                        **transfer},
        "mup_best_lr_shift_steps": transfer["mup"]["shift_steps"],
        "sp_best_lr_shift_steps": transfer["sp"]["shift_steps"],
        "coordinate_check": coordinates,
        "goals": {"fit_holdout_rel_error": goal(holdout, "<=", 0.05),
                  "synthetic_recovery_max_rel_error": goal(recovery["max_rel_error"], "<=", 0.05),
                  "doctor_all_detected": goal(int(all(doctor["found_alone"].values())), ">=", 1),
                  "doctor_false_findings_clean_run": goal(doctor["false_findings"], "<=", 0),
                  "mup_best_lr_shift_steps": goal(transfer["mup"]["shift_steps"], "<=", 1),
                  "sp_shifts_more_than_mup": {"value": transfer["sp"]["shift_steps"] - transfer["mup"]["shift_steps"],
                                              "target": "> 0",
                                              "met": transfer["sp"]["shift_steps"] > transfer["mup"]["shift_steps"]}},
        "mlflow_run_id": result["mlflow_run_id"],
    }
    write_result(args.out, report, "training_science.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
