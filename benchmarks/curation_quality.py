"""Issue 19, part 6: each curation change that landed, measured on the model. Per part, one ablation on the bench
corpus (benchmarks/ablation.py's model, evaluation suite and shared tokenizer): the full recipe without the change
and with it, same seeds, same token budget, held-out bits per byte.

    .venv/bin/python benchmarks/curation_quality.py [--part 1_boilerplate] [--seeds 3] [--tokens 524288]
                                                            # ~40 min per part on 2 cores

Writes `results/curation_quality.json`: per part, `bpb_before`, `bpb_after` (macro over the suite's domains, mean
over seeds), `seed_std` (the two variants' seed standard deviations, pooled), the difference, its
signal-to-noise ratio and p-value, the verdict, and the command and date that measured it (a run of one part
keeps the others' recorded figures; each part records the corpus it ran on: bits per byte compare within a part,
not across parts measured on different corpora).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ablation import bench_ablation, budget_parser  # noqa: E402
from benchmarks.dedup import FIVE_GRAMS  # noqa: E402
from benchmarks.harness import RESULTS, bench_env, command_line, ensure_corpus, now, write_result  # noqa: E402


@dataclass(frozen=True)
class Part:
    change: str
    before: tuple[str, dict]       # variant name, recipe overrides
    after: tuple[str, dict]


PARTS = {
    "1_boilerplate": Part("extract.html.max_boilerplate_probability 0.95 (the trained block classifier)",
                          ("default_extraction", {}),
                          ("boilerplate_classifier", {"extract": {"html": {"max_boilerplate_probability": 0.95}}})),
    "2_residual_duplicates": Part("MinHash on word bigrams, 28 x 4 bands, verified at 0.65",
                                  ("five_gram_dedup", {"dedup": {"minhash": FIVE_GRAMS}}), ("bigram_dedup", {})),
    # no better-ranking perplexity model landed (quality.json, kenlm_ccnet_oracle): what part 3 can show on the
    # model is whether the CCNet-style filter as it stands earns its place
    "3_perplexity": Part("quality.filter.kenlm: drop the tail third by CCNet-style perplexity (the default)",
                         ("no_perplexity_filter", {"quality": {"filter": {"kenlm": {"enabled": False}}}}),
                         ("perplexity_filter", {})),
}


def measure(name: str, part: Part, corpus: Path, seeds: int, tokens: int) -> dict:
    from flows.ablation import ablation_flow
    from tasks.evaluation.compare import rounded

    (before, before_overrides), (after, after_overrides) = part.before, part.after
    ablation = bench_ablation(corpus, {before: before_overrides, after: after_overrides}, seeds, tokens,
                              name=f"curation-quality-{name.replace('_', '-')}")
    started = time.perf_counter()
    result = ablation_flow(ablation)
    table = result["table"]["variants"]
    versus = table[after]["vs_baseline"]["macro"]
    return {"change": part.change, "variant": after, "baseline": before,
            "bpb_before": round(table[before]["metrics"]["macro"]["mean"], 5),
            "bpb_after": round(table[after]["metrics"]["macro"]["mean"], 5),
            "seed_std": rounded(versus["seed_std"], 5), "difference": rounded(versus["difference"], 5),
            "snr": rounded(versus["snr"], 3), "p_value": versus["p_value"],
            "documents_out": {variant: result["why"][variant]["documents_out"] for variant in (before, after)},
            "seeds": len(ablation.seeds), "tokens_per_run": ablation.tokens, "verdict": result["verdict"],
            "wall_seconds": round(time.perf_counter() - started, 1), "mlflow_run_id": result["mlflow_run_id"],
            "markdown": result["markdown"]}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser: argparse.ArgumentParser = budget_parser(__doc__.split("\n")[0], 1 << 19, RESULTS / "curation_quality.json")
    parser.add_argument("--part", choices=sorted(PARTS), action="append", help="the part(s) to measure (default: all)")
    args = parser.parse_args(argv)
    os.environ.update(bench_env())
    corpus, origin = ensure_corpus()
    recorded = json.loads(args.out.read_text()) if args.out.exists() else {}
    parts = recorded.get("parts", {})
    for name in args.part or sorted(PARTS):
        parts[name] = measure(name, PARTS[name], corpus, args.seeds, args.tokens) | {
            "corpus": origin, "command": command_line("curation_quality.py", argv), "date": now()}
        print(parts[name]["markdown"])
    # the file's command and date are its last writer's; each part keeps the command and date that measured it
    write_result(args.out, {"corpus": origin, "parts": dict(sorted(parts.items()))}, "curation_quality.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
