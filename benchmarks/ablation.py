"""The ablation on the bench corpus: does the full recipe beat raw extraction on held-out clean text by more than
seed noise?

    .venv/bin/python benchmarks/ablation.py [--variants raw,+classifier] [--seeds 3] [--tokens 1048576]
    .venv/bin/python benchmarks/ablation.py --incremental [--seeds 3]     # all five variants, attributed
    .venv/bin/python benchmarks/ablation.py --block-selector [--seeds 3]  # the full recipe, extraction changed

`configs/ablation.yaml` with the bench corpus as input (`sluice corpus --size bench --seed 0`, built once under
benchmarks/_work/) and a model of about 4M parameters (4 layers, d_model 256, seq_len 256, a 4,096-piece
tokenizer) trained on exactly `--tokens` tokens per run, on 2 CPU ranks. Everything else (the evaluation suite,
decontamination, seeds, the statistics) is the shipped ablation file's. Writes `results/ablation.json`; with
`--incremental`, the five variants in DCLM's order, the suite scored every 32 updates, and the attribution
(`benchmarks/attribution.py`: steps per domain, tokens to match raw, tail averaging and coupling) in
`results/ablation_incremental.json` with the steps chart beside it. With `--block-selector`, the full recipe with
resiliparse's main content against the full recipe with the learned block selector (`extract.html.block_selector`),
in `results/ablation_extraction.json`.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import RESULTS, ROOT, WORK, bench_env, ensure_corpus, write_result  # noqa: E402

MODEL = {"preset": "tiny", "n_layers": 4, "d_model": 256, "n_heads": 4, "seq_len": 256}


def shipped_variants(names: list[str]) -> dict[str, dict]:
    """The named variants of configs/ablation.yaml, in that order (the first is the baseline)."""
    shipped = yaml.safe_load((ROOT / "configs" / "ablation.yaml").read_text())["variants"]
    return {name: shipped[name] for name in names}


def budget_parser(description: str, tokens: int, out: Path) -> argparse.ArgumentParser:
    """The arguments every ablation benchmark takes: seeds, tokens per run, the result file."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=tokens)
    parser.add_argument("--out", type=Path, default=out)
    return parser


SENTENCEPIECE_DEFAULTS = {"normalization": "nmt_nfkc", "remove_extra_whitespaces": True}   # lossy: see docs/experiment.md


RECIPE_GOAL = "the full recipe beats raw on held-out clean text by more than 2x the seed std"
SELECTOR_GOAL = ("the block selector's full recipe beats main content's on held-out clean text by more than 2x the seed "
                 "std (reported whatever its sign)")
BLOCK_SELECTOR_VARIANTS = {       # the full recipe (+classifier) both ways: the baseline names its setting too
    "main content": {"extract": {"html": {"block_selector": False}}},
    "block selector": {"extract": {"html": {"block_selector": True}}},
}


def bench_ablation(corpus: Path, variants: dict[str, dict], seeds: int, tokens: int, name: str = "ablation-bench",
                   tokenizer: dict | None = None, seed_controls: list[str] | None = None, eval_every: int = 64,
                   model: dict = MODEL, variance_split: bool = False):
    """configs/ablation.yaml on the bench corpus with the benchmark's model, these variants (the first is the
    baseline), seeds and tokens; `tokenizer`: settings over the shipped file's; `seed_controls`: what a seed sets,
    if not the shipped file's; `eval_every`: updates between scorings of the suite; `model`: the model's shape;
    `variance_split`: also the baseline with each seed control alone."""
    from configs.ablation import parse_ablation

    raw = yaml.safe_load((ROOT / "configs" / "ablation.yaml").read_text())
    base = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    base |= {"name": "bench", "store": str(WORK / "ablation-store"),
             "input": {"paths": [str(corpus / "warc")], "source": "cc-sluice-bench"}}
    raw |= {"name": name, "base": base, "origin": str(ROOT), "variants": variants, "baseline": next(iter(variants)),
            "seeds": list(range(seeds)), "tokens": tokens, "seed_controls": seed_controls or raw["seed_controls"],
            "tokenizer": raw["tokenizer"] | {"vocab_size": 4096} | (tokenizer or {}),
            "mlflow": {"experiment": "sluice-ablation-bench", "tracking_uri": f"sqlite:///{WORK}/ablation-mlflow.db"},
            "variance_split": variance_split}
    raw["train"] |= {"model": model, "micro_batch_size": 8, "optimizer": {"lr": 0.001, "warmup_steps": 40},
                     "eval": {"every": eval_every, "batches": 2}, "checkpoint": {"every": 32}}
    return parse_ablation(raw, origin="benchmarks/ablation.py")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = budget_parser(__doc__.split("\n")[0], 1 << 20, RESULTS / "ablation.json")
    parser.add_argument("--variants", default="raw,+classifier", help="comma-separated, from configs/ablation.yaml")
    parser.add_argument("--sentencepiece-defaults", action="store_true", help=(
        "the shared tokenizer with SentencePiece's lossy defaults (nmt_nfkc, whitespace collapsed), as the "
        "ablation had before it was made lossless"))
    parser.add_argument("--seed-controls", help="comma-separated: what a run's seed sets (default: the shipped "
                                                  "file's init,data_order,mixture_draw)")
    parser.add_argument("--variance-split", action="store_true", help=(
        "also the baseline with each seed control varied alone (which part of the seed noise each holds)"))
    parser.add_argument("--incremental", action="store_true", help=(
        "all five shipped variants, scored every 32 updates, attributed step by step (results/ablation_incremental"
        ".json unless --out)"))
    parser.add_argument("--block-selector", action="store_true", help=(
        "the full recipe with resiliparse's main content against the full recipe with the learned block selector "
        "(results/ablation_extraction.json unless --out)"))
    args = parser.parse_args(argv)
    if args.incremental:
        args.variants = ",".join(yaml.safe_load((ROOT / "configs" / "ablation.yaml").read_text())["variants"])
        if args.out == RESULTS / "ablation.json":
            args.out = RESULTS / "ablation_incremental.json"
    if args.block_selector and args.out == RESULTS / "ablation.json":
        args.out = RESULTS / "ablation_extraction.json"
    variants = BLOCK_SELECTOR_VARIANTS if args.block_selector else shipped_variants(args.variants.split(","))
    os.environ.update(bench_env())
    corpus, origin = ensure_corpus()
    from flows.ablation import ablation_flow, budget_figures
    from tasks.evaluation.compare import rounded
    from training.plan import plan

    ablation = bench_ablation(corpus, variants, args.seeds, args.tokens,
                              tokenizer=SENTENCEPIECE_DEFAULTS if args.sentencepiece_defaults else None,
                              seed_controls=args.seed_controls.split(",") if args.seed_controls else None,
                              eval_every=32 if args.incremental else 64, variance_split=args.variance_split)
    budget_figures(ablation)
    started = time.perf_counter()
    result = ablation_flow(ablation)
    wall = time.perf_counter() - started
    table, variants = result["table"], list(ablation.variants)
    full, baseline = variants[-1], ablation.baseline_variant
    versus = table["variants"][full]["vs_baseline"]["macro"]
    parameters = plan(ablation.train.model_copy(update={"tokens": ablation.tokens, "model": ablation.train.model
                                                        .model_copy(update={"vocab_size": 4096})}))["parameters"]
    report = {
        "corpus": origin,
        "model": MODEL | {"vocab_size": 4096, "parameters": parameters},
        "seeds": len(ablation.seeds),
        "seed_controls": ablation.seed_controls,
        "tokens_per_run": ablation.tokens,
        "tokenizer": ablation.tokenizer.model_dump(include={"vocab_size", "normalization", "remove_extra_whitespaces"}),
        "variants": {name: {"bpb": {metric: {"mean": round(cell["mean"], 5), "std": round(cell["std"], 5)}
                                    for metric, cell in row["metrics"].items()},
                            "epochs": result["why"][name]["epochs"], "tokens": ablation.tokens,
                            "unique_train_tokens": result["why"][name]["unique_train_tokens"],
                            "documents_out": result["why"][name]["documents_out"],
                            "removed": result["why"][name]["removed"]}
                     for name, row in table["variants"].items()},
        "baseline": baseline,
        "full": full,
        "difference_full_minus_raw_bpb": rounded(versus["difference"], 5),
        "seed_std": rounded(versus["seed_std"], 5),
        "snr": rounded(versus["snr"], 3),
        "p_value": versus["p_value"],
        "per_domain_vs_raw": {metric: {key: (round(value, 5) if isinstance(value, float) else value)
                                       for key, value in cell.items()}
                              for metric, cell in table["variants"][full]["vs_baseline"].items()},
        "verdict": result["verdict"],
        "decontaminated_documents": {name: row["removed"].get("decontaminate", {}).get("eval_contamination", 0)
                                     for name, row in result["why"].items()},
        "goal": SELECTOR_GOAL if args.block_selector else RECIPE_GOAL,
        "goal_met": versus["snr"] is not None and versus["difference"] < 0 and versus["snr"] > 2,
        "wall_seconds": round(wall, 1),
        "mlflow_run_id": result["mlflow_run_id"],
        "markdown": result["markdown"],
    }
    if args.incremental:
        report |= attribution(result, ablation, args.out.with_suffix(".png"))
    write_result(args.out, report, "ablation.py", argv)
    print(result["markdown"])
    return 0


def attribution(result: dict, ablation, chart: Path) -> dict:
    """The incremental ablation's steps, data efficiency and noise (benchmarks/attribution.py), and its chart."""
    from benchmarks.attribution import noise, steps, suite_curves, token_extrapolation, tokens_to_match
    from flows.ablation import look_power
    from tasks.evaluation.charts import steps_png

    table, variants = result["table"], list(ablation.variants)
    curves = suite_curves(result["mlflow_run_id"], table["metrics"])
    steps_png(table, str(chart))
    return {"steps": steps(table), "step_verdicts": table["step_verdicts"],
            "variance_split": table.get("variance_split") or "not measured: run with --variance-split",
            "tokens_to_match_raw": tokens_to_match(curves, variants[0], variants[-1]),
            "noise_final_vs_tail": noise(curves, variants, variants[0], look_power(ablation)),
            "tokens_to_resolve": token_extrapolation(curves, variants, variants[0], look_power(ablation)),
            "chart": str(chart.relative_to(ROOT))}


if __name__ == "__main__":
    sys.exit(main())
