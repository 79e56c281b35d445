"""Issue 19, part 6: each curation change that landed, measured on the model. One ablation on the bench corpus
(benchmarks/ablation.py's model, evaluation suite and shared tokenizer): the full recipe as it was before the
change, the full recipe after it, same seeds, same token budget, held-out bits per byte.

    .venv/bin/python benchmarks/curation_quality.py [--seeds 3] [--tokens 524288]     # ~45 min on 2 cores

Writes `results/curation_quality.json`: per part, `bpb_before`, `bpb_after` (macro over the suite's domains, mean
over seeds), `seed_std` (the pooled standard deviation of the paired differences), the difference, its
signal-to-noise ratio and p-value, and the verdict. Parts whose change did not land say so instead of a figure.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ablation import bench_ablation, budget_parser  # noqa: E402
from benchmarks.dedup import FIVE_GRAMS  # noqa: E402
from benchmarks.harness import RESULTS, bench_env, ensure_corpus, write_result  # noqa: E402

BEFORE = "five_gram_dedup"
# Variant name -> (issue part, what changed): each compared with BEFORE, the full recipe before issue 19.
AFTER = {"bigram_dedup": ("2_residual_duplicates", "MinHash on word bigrams, 28 x 4 bands, verified at 0.65")}
VARIANTS = {BEFORE: {"dedup": {"minhash": FIVE_GRAMS}}, "bigram_dedup": {}}
NOT_LANDED = {
    "1_boilerplate": "no extraction change landed: the leak is still extraction_quality.json's default row",
    "3_perplexity": "no KenLM change landed: the shared reference text cannot reach the CCNet ranking "
                    "(quality.json, kenlm_ccnet_oracle)",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = budget_parser(__doc__.split("\n")[0], 1 << 19, RESULTS / "curation_quality.json").parse_args(argv)
    os.environ.update(bench_env())
    corpus, origin = ensure_corpus()
    from flows.ablation import ablation_flow

    ablation = bench_ablation(corpus, VARIANTS, args.seeds, args.tokens, name="curation-quality-bench")
    started = time.perf_counter()
    result = ablation_flow(ablation)
    table = result["table"]["variants"]
    parts = {}
    for variant, (part, change) in AFTER.items():
        versus = table[variant]["vs_baseline"]["macro"]
        parts[part] = {"change": change, "variant": variant,
                       "bpb_before": round(table[BEFORE]["metrics"]["macro"]["mean"], 5),
                       "bpb_after": round(table[variant]["metrics"]["macro"]["mean"], 5),
                       "seed_std": round(versus["seed_std"], 5), "difference": round(versus["difference"], 5),
                       "snr": round(versus["snr"], 3), "p_value": versus["p_value"],
                       "documents_out": {name: result["why"][name]["documents_out"] for name in (BEFORE, variant)}}
    report = {
        "corpus": origin, "seeds": len(ablation.seeds), "tokens_per_run": ablation.tokens, "baseline": BEFORE,
        "parts": parts | {part: {"status": reason} for part, reason in NOT_LANDED.items()},
        "verdict": result["verdict"], "wall_seconds": round(time.perf_counter() - started, 1),
        "mlflow_run_id": result["mlflow_run_id"], "markdown": result["markdown"],
    }
    write_result(args.out, report, "curation_quality.py", argv)
    print(result["markdown"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
