"""The mixture search on the bench corpus: does the mixture a swarm of proxies proposes beat the corpus's natural
mixture at matched tokens?

    .venv/bin/python benchmarks/mixtures.py [--topics 4] [--swarm 16] [--seeds 3] [--tokens 524288] [--law tree]
        [--validation-max-seeds 6] [--size-curve]

`configs/mix_search.yaml` with the bench corpus as input (built once under benchmarks/_work/), its domain stage
cut to `--topics` topic clusters, and the ablation benchmark's model (about 4M parameters, 2 CPU ranks) as the
proxy. Writes `results/mixtures.json`: the domains, the swarm, the fit's held-out error (macro and per domain),
what each swarm run added to it (`swarm_size_curve`; `--size-curve` prints it from the recorded file), the
trust region, the proposed and natural weights, the predicted and realized gain, and the validation's per-domain
and macro bits per byte, its difference, minimum detectable effect and verdict.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ablation import MODEL, budget_parser  # noqa: E402
from benchmarks.harness import RESULTS, ROOT, WORK, bench_env, ensure_corpus, write_result  # noqa: E402


def bench_search(corpus: Path, topics: int, swarm: int, seeds: int, tokens: int, law: str, most_seeds: int):
    from configs.mix_search import parse_mix_search

    raw = yaml.safe_load((ROOT / "configs" / "mix_search.yaml").read_text())
    base = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    base |= {"name": "bench", "store": str(WORK / "ablation-store"),
             "input": {"paths": [str(corpus / "warc")], "source": "cc-sluice-bench"},
             "domains": base["domains"] | {"topics": topics}}
    raw |= {"name": "mix-search-bench", "base": base, "origin": str(ROOT), "law": law,
            "swarm": raw["swarm"] | {"size": swarm}, "seeds": list(range(seeds)), "tokens": tokens,
            "validation_rounds": {"max": most_seeds, "step": 1} if most_seeds > seeds else None,
            "tokenizer": raw["tokenizer"] | {"vocab_size": 4096},
            "mlflow": {"experiment": "sluice-mix-search-bench",
                       "tracking_uri": f"sqlite:///{WORK}/ablation-mlflow.db"}}
    # the ablation benchmark's optimizer, warmup cut to the proxies' 64 updates
    raw["train"] |= {"model": MODEL, "micro_batch_size": 8, "optimizer": {"lr": 0.001, "warmup_steps": 8},
                     "eval": {"every": 64, "batches": 2}, "checkpoint": {"every": 32}}
    return parse_mix_search(raw, origin="benchmarks/mixtures.py")


def swarm_size_curve(members: list[dict], smallest: int = 6) -> dict[int, dict[str, float]]:
    """What each added swarm run bought: per swarm size n (the first n members, in draw order), the law's
    leave-one-out rank correlation on every metric, fitted to those members alone."""
    from tasks.mixture.mixing_law import held_out_error

    weights = np.array([member["weights"] for member in members])
    return {size: {metric: round(held_out_error(weights[:size], np.array([member["measured"][metric]
                                                                           for member in members[:size]]))
                                 ["rank_correlation"], 3) for metric in members[0]["measured"]}
            for size in range(smallest, len(members) + 1)}


def within_region(result: dict) -> bool:
    """Whether the proposed weights keep to the trust region (to the recipe's rounding of weights)."""
    region = result["trust_region"]
    return all(low - 1e-6 <= weight <= high + 1e-6 for weight, low, high in
               zip(result["mixtures"]["proposed"], region["lower"], region["upper"]))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = budget_parser(__doc__.split("\n")[0], 1 << 19, RESULTS / "mixtures.json")
    parser.add_argument("--topics", type=int, default=4)
    parser.add_argument("--swarm", type=int, default=16)
    parser.add_argument("--law", default="log_linear", choices=["log_linear", "tree"])
    parser.add_argument("--validation-max-seeds", type=int, default=6,
                        help="the validation adds a seed at a time until proposed vs natural is called or this many")
    parser.add_argument("--size-curve", action="store_true",
                        help="print the recorded file's swarm-size curve (swarm_size_curve) and stop: no runs")
    args = parser.parse_args(argv)
    if args.size_curve:
        print(json.dumps(swarm_size_curve(json.loads(args.out.read_text())["swarm"]["members"]), indent=1))
        return 0
    os.environ.update(bench_env())
    corpus, origin = ensure_corpus()
    from flows.ablation import budget_figures
    from flows.mix_search import mix_search_flow
    from training.plan import plan

    search = bench_search(corpus, args.topics, args.swarm, args.seeds, args.tokens, args.law,
                          args.validation_max_seeds)
    budget_figures(search)
    started = time.perf_counter()
    result = mix_search_flow(search)
    wall = time.perf_counter() - started
    parameters = plan(search.train.model_copy(update={"tokens": search.tokens, "model": search.train.model
                                                      .model_copy(update={"vocab_size": 4096})}))["parameters"]
    validation = result["validation"]
    target = result["target"]
    report = {
        "corpus": origin,
        "domains": {"column": result["column"], "k": len(result["domains"]["ids"]),
                    "tokens": dict(zip(result["domains"]["names"], result["domains"]["tokens"])),
                    "caps": dict(zip(result["domains"]["names"], result["domains"]["caps"]))},
        "swarm": {"n": result["swarm"]["size"], "proxy_parameters": parameters, "tokens_per_proxy": search.tokens,
                  "concentration": search.swarm.concentration, "members": result["swarm"]["members"]},
        "law": result["law"], "target": target,
        "fit_rank_correlation_heldout": result["fit"][target]["rank_correlation"],
        "fit_mae_heldout": result["fit"][target]["mean_absolute_error"],
        "fit_rank_correlation_heldout_by_domain": {metric: fit["rank_correlation"] for metric, fit in
                                                   result["fit"].items() if metric != "macro"},
        "fit_by_metric": result["fit"],
        "swarm_size_curve": swarm_size_curve(result["swarm"]["members"]),
        "trust_region": {key: dict(zip(result["domains"]["names"], value)) if isinstance(value, list) else value
                         for key, value in result["trust_region"].items()},
        "proposed_weights": dict(zip(result["domains"]["names"], result["mixtures"]["proposed"])),
        "natural_weights": dict(zip(result["domains"]["names"], result["mixtures"]["natural"])),
        "uniform_weights": dict(zip(result["domains"]["names"], result["mixtures"]["uniform"])),
        "predicted_bpb": result["predicted"],
        "predicted_gain": result["predicted_gain"],
        "realized_gain": validation["realized_gain"],
        "seeds_to_resolve_predicted_gain": validation["seeds_to_resolve_predicted_gain"],
        "validation": {"seeds": validation["seeds"], "bpb": validation["bpb"], "verdicts": validation["verdicts"]},
        "difference_proposed_minus_natural": validation["difference_proposed_minus_natural"],
        "p_value": validation["p_value"],
        "minimum_detectable_effect": validation["minimum_detectable_effect"],
        "verdict": validation["verdict"],
        "goal": "held-out rank correlation of the fit at least 0.8 (0.6 per domain); the proposal within its trust "
                "region; the proposed mixture called better than natural on macro bpb, or its effect bounded by the "
                "minimum detectable effect",
        "goal_met": {"fit": result["fit"][target]["rank_correlation"] >= 0.8,
                     "fit_by_domain": all(fit["rank_correlation"] >= 0.6 for metric, fit in result["fit"].items()
                                          if metric != "macro"),
                     "within_trust_region": within_region(result),
                     "validation_called_better": validation["called"] and
                     validation["difference_proposed_minus_natural"] < 0},
        "wall_seconds": round(wall, 1),
        "mlflow_run_id": result["mlflow_run_id"],
        "markdown": result["markdown"],
    }
    write_result(args.out, report, "mixtures.py", argv)
    print(result["markdown"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
