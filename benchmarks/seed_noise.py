"""Where an ablation's seed noise comes from: the models, or the evaluation suite's size?

    .venv/bin/python benchmarks/seed_noise.py [--halves 400]      # after benchmarks/ablation.py; ~1 min

A verdict weighs a difference against the seed std of each variant's macro bits per byte. Part of that std is the
models differing (their weights, data order and mixture draw) and would stay with any suite; part is how each
model happens to fit the suite's few documents, and shrinks as the suite grows. This splits the two, for the runs
of the ablation recorded in results/ablation.json (read from its MLflow store, every run's logged model scored
again here, one process, CPU):

- each model scores every 256-token window of the suite alone (exact bits per byte as the trainer computes it:
  each window's NLL, a domain's bytes shared out over its windows by tokens, the same for every model since they
  share one tokenizer); the full suite reproduces each run's logged `suite_bpb/macro`;
- the seed variance of the macro over random halves of each domain's windows, V(half), against the full suite's,
  V(full): with V(n) = A + B / n over n windows, A = 2 V(full) - V(half) is the models' part and
  B / n = V(half) - V(full) the suite's; a suite k times larger would give A + B / (k n).

Windows of one document are not independent draws, so the suite's part is a lower bound (the halves share
documents). Writes results/seed_noise.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import RESULTS, WORK, bench_env, write_result  # noqa: E402

SEED = 0
SUITE_SCALES = (1, 4, 16)


def window_scores(run, batch_size: int = 16) -> tuple[np.ndarray, np.ndarray, list[str], float]:
    """For one training run: per suite window its NLL (nats) and its share of its domain's bytes, the windows'
    domains, and the run's logged macro bpb."""
    import mlflow
    import torch

    from configs.tokenizer import EOS_ID
    from training.exact_bpb import SuiteTokens, Window, load_suite, suite_nll
    from flows.logged_model import load_language_model

    models = mlflow.search_logged_models(experiment_ids=[run.info.experiment_id], output_format="list",
                                         filter_string=f"source_run_id = '{run.info.run_id}'")
    loaded = load_language_model(f"models:/{models[0].model_id}")
    seq_len = loaded.model.config.seq_len
    suite = load_suite(run.data.params["eval.suite"], run.data.params["data.tokenizer"], EOS_ID, seq_len)
    alone = SuiteTokens([str(index) for index in range(len(suite.windows))], [1] * len(suite.windows),
                        [Window(index, window.inputs, window.targets) for index, window in enumerate(suite.windows)])
    nll = suite_nll(loaded.model, alone, seq_len, batch_size, 0, 1, torch.device("cpu"))
    tokens = np.array([window.targets.size for window in suite.windows], dtype=np.float64)
    domains = [suite.domains[window.domain] for window in suite.windows]
    domain_tokens = {name: tokens[[d == name for d in domains]].sum() for name in suite.domains}
    domain_bytes = dict(zip(suite.domains, suite.bytes))
    byte_share = np.array([domain_bytes[d] * size / domain_tokens[d] for d, size in zip(domains, tokens)])
    return nll, byte_share, domains, run.data.metrics["suite_bpb/macro"]


def macro(nll: np.ndarray, byte_share: np.ndarray, domains: np.ndarray, chosen: np.ndarray) -> float:
    """Macro bpb over the chosen windows: per domain summed NLL / ln 2 / its windows' bytes, then the mean."""
    values = [nll[chosen & (domains == name)].sum() / math.log(2) / byte_share[chosen & (domains == name)].sum()
              for name in np.unique(domains)]
    return float(np.mean(values))


def decompose(scores: dict[str, list[tuple]], halves: int) -> dict:
    """Per variant: the seed std on the full suite, and its models' and suite's parts from random halves."""
    rng = np.random.default_rng(SEED)
    report = {}
    for variant, runs in scores.items():
        domains = np.array(runs[0][2])
        everything = np.ones(len(domains), dtype=bool)
        full = np.var([macro(nll, share, domains, everything) for nll, share, _, _ in runs], ddof=1)
        half_variances = []
        for _ in range(halves):
            chosen = np.zeros(len(domains), dtype=bool)
            for name in np.unique(domains):
                members = np.flatnonzero(domains == name)
                chosen[rng.choice(members, size=len(members) // 2, replace=False)] = True
            for side in (chosen, ~chosen):
                half_variances.append(np.var([macro(nll, share, domains, side) for nll, share, _, _ in runs], ddof=1))
        half = float(np.mean(half_variances))
        models, suite = max(0.0, 2 * full - half), max(0.0, half - full)
        report[variant] = {
            "seeds": len(runs), "windows": len(domains), "seed_std": round(math.sqrt(full), 5),
            "seed_std_half_suite": round(math.sqrt(half), 5),
            "models_part_std": round(math.sqrt(models), 5), "suite_part_std": round(math.sqrt(suite), 5),
            "suite_share_of_variance": round(suite / full, 3) if full > 0 else None,
            "seed_std_with_suite_times": {str(k): round(math.sqrt(models + suite / k), 5) for k in SUITE_SCALES}}
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--halves", type=int, default=400, help="random half-suites per variant")
    parser.add_argument("--ablation", type=Path, default=RESULTS / "ablation.json")
    parser.add_argument("--out", type=Path, default=RESULTS / "seed_noise.json")
    args = parser.parse_args(argv)
    os.environ.update(bench_env())
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{WORK}/ablation-mlflow.db"
    from flows.ablation_report import training_runs

    ablation = json.loads(args.ablation.read_text())
    scores: dict[str, list[tuple]] = {}
    reproduced = []
    for (variant, _seed), run in sorted(training_runs(ablation["mlflow_run_id"]).items()):
        nll, share, domains, logged = window_scores(run)
        again = macro(nll, share, np.array(domains), np.ones(len(domains), dtype=bool))
        reproduced.append(abs(again - logged))
        scores.setdefault(variant, []).append((nll, share, domains, logged))
    if max(reproduced) > 1e-3:
        raise RuntimeError(f"scoring the logged models again gives macro bpb up to {max(reproduced):.4f} away from "
                           f"what their runs logged: the suite or the models are not the ones the runs used")
    report = {"ablation": {key: ablation[key] for key in ("date", "command", "mlflow_run_id", "seeds")},
              "max_rescoring_error_bpb": round(max(reproduced), 6), "halves": args.halves,
              "variants": decompose(scores, args.halves)}
    write_result(args.out, report, "seed_noise.py", argv)
    print(json.dumps(report["variants"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
