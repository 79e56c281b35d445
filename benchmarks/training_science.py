"""Sizing and diagnosing runs (issue 18): a scaling ladder trained for real, the L(N, D) fit over it, the fit's
recovery of a known law, and `sluice doctor` on the ladder's runs with faults injected.

    .venv/bin/python benchmarks/training_science.py [--tokens 32768,65536,131072] [--corpus bench|small]

- The ladder: `configs/ladder.yaml`'s 4 model sizes x `--tokens` budgets on the demo recipe's mixture of the bench
  corpus (`sluice corpus --size bench --seed 0`, built once under benchmarks/_work/), 2 CPU ranks.
- The fit: Chinchilla's approach 3 with bootstrap intervals; `fit_holdout_rel_error` is the largest relative error
  of the largest model's losses predicted by the law fitted without it.
- Synthetic recovery: Chinchilla's published law on a 6 x 5 grid (10M-10B parameters, 1B-1T tokens) with 0.1%
  multiplicative noise, 3 seeds: the largest relative error of any parameter.
- The doctor: every ladder run as it was tracked (a finding there is a false finding: the runs are healthy), and
  each drill (training.doctor_drills) injected into the longest run's real history, which must be found alone.
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

from benchmarks.harness import RESULTS, ROOT, WORK, bench_env, ensure_corpus, goal, log, write_result  # noqa: E402

SYNTHETIC_NOISE, SYNTHETIC_SEEDS = 0.001, (0, 1, 2)


def bench_sweep(corpus: Path, tokens: list[int]):
    from configs.sweep import parse_sweep

    raw = yaml.safe_load((ROOT / "configs" / "ladder.yaml").read_text())
    recipe = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    recipe |= {"name": "ladder-bench", "store": str(WORK / "ladder-store"),
               "input": {"paths": [str(corpus / "warc")], "source": "cc-sluice-bench"}}
    raw |= {"name": "ladder-bench", "recipe": recipe, "tokens": tokens, "origin": str(ROOT),
            "mlflow": {"experiment": "sluice-ladder-bench", "tracking_uri": f"sqlite:///{WORK}/ladder-mlflow.db"}}
    return parse_sweep(raw, origin="benchmarks/training_science.py")


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


def doctor_drills(run_ids: list[str], tracking: str) -> dict:
    import mlflow

    from flows.doctor import run_history
    from training.doctor import diagnose
    from training.doctor_drills import FAULTS, MIN_STEPS, inject

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
        corpus, origin = WORK / "small-corpus", "sluice corpus --size small --seed 0"
        if not (corpus / "corpus.json").exists():
            import subprocess
            subprocess.run([str(ROOT / ".venv/bin/sluice"), "corpus", "--size", "small", "--out", str(corpus)],
                           check=True, env=bench_env())
    from flows.sweep import sweep_flow

    sweep = bench_sweep(corpus, [int(value) for value in args.tokens.split(",")])
    started = time.perf_counter()
    result = sweep_flow(sweep)
    wall = time.perf_counter() - started
    log(f"ladder: {len(result['runs'])} runs in {wall:.0f} s")
    fit = result["fit"]
    recovery = synthetic_recovery()
    doctor = doctor_drills([run["mlflow_run_id"] for run in result["runs"]], result["mlflow_tracking_uri"])
    holdout = fit["holdout"]["max_rel_error"] if fit and fit["holdout"] else None
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
        "not_measured": {"mup_best_lr_shift_steps": "muP (part 3) is not built yet",
                         "sp_best_lr_shift_steps": "the learning-rate sweep across widths comes with muP (part 3)"},
        "goals": {"fit_holdout_rel_error": goal(holdout, "<=", 0.05),
                  "synthetic_recovery_max_rel_error": goal(recovery["max_rel_error"], "<=", 0.05),
                  "doctor_all_detected": goal(int(all(doctor["found_alone"].values())), ">=", 1),
                  "doctor_false_findings_clean_run": goal(doctor["false_findings"], "<=", 0)},
        "mlflow_run_id": result["mlflow_run_id"],
    }
    write_result(args.out, report, "training_science.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
