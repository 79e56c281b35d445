"""The ablation's statistics: per variant, the mean and standard deviation over seeds of bits per byte per domain
and macro; the difference to the baseline variant paired by seed, a paired t-test, and the signal-to-noise ratio
|mean difference| / seed std; and a one-line verdict. Lower bits per byte is better.

The seed std of a comparison is the pooled sample standard deviation of the two variants over the seeds both have
(sqrt of the mean of the two variances): the noise one would see between two runs of the same recipe. With fewer
than two such seeds, or seeds that all scored alike, there is no noise to weigh a difference against: the snr is
None and the verdict says so instead of calling a winner.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

SNR_THRESHOLD = 2.0      # a difference below this many seed stds is not called


@dataclass(frozen=True)
class RunScore:
    variant: str
    seed: int
    bpb: dict[str, float]       # domain -> bits per byte, plus "macro"


def compare(runs: list[RunScore], variants: list[str], baseline: str) -> dict:
    """The comparison table as a dict: `variants` (in the given order) with per-metric mean / std / n and, for
    all but the baseline, `vs_baseline` per metric (difference, paired t-test p, snr)."""
    by_variant = {name: {run.seed: run.bpb for run in runs if run.variant == name} for name in variants}
    missing = [name for name, seeds in by_variant.items() if not seeds]
    if missing:
        raise ValueError(f"no finished runs for variants {missing}")
    metrics = sorted({metric for run in runs for metric in run.bpb}, key=lambda m: (m == "macro", m))
    table = {}
    for name in variants:
        seeds = by_variant[name]
        row = {"seeds": sorted(seeds), "metrics": {}}
        for metric in metrics:
            values = np.array([seeds[seed][metric] for seed in sorted(seeds)])
            row["metrics"][metric] = {"mean": float(values.mean()), "std": _std(values), "n": int(values.size)}
        if name != baseline:
            row["vs_baseline"] = {metric: paired_difference(seeds, by_variant[baseline], metric) for metric in metrics}
        table[name] = row
    return {"baseline": baseline, "metrics": metrics, "variants": table}


def paired_difference(variant: dict[int, dict], baseline: dict[int, dict], metric: str) -> dict:
    """variant - baseline over the seeds both have (negative: the variant is better); `difference`, `seed_std`,
    `snr` and `p_value` are None where those seeds cannot give them."""
    shared = sorted(set(variant) & set(baseline))
    ours = np.array([variant[seed][metric] for seed in shared])
    theirs = np.array([baseline[seed][metric] for seed in shared])
    differences = ours - theirs
    mean = float(differences.mean()) if shared else None
    pooled = math.sqrt((_std(ours) ** 2 + _std(theirs) ** 2) / 2) if len(shared) >= 2 else None
    p_value = None
    if len(shared) >= 2 and differences.std(ddof=1) > 0:
        p_value = float(scipy_stats.ttest_rel(ours, theirs).pvalue)
    return {"difference": mean, "seed_std": pooled, "snr": abs(mean) / pooled if pooled else None,
            "p_value": p_value, "pairs": len(shared)}


def _std(values: np.ndarray) -> float:
    return float(values.std(ddof=1)) if values.size > 1 else 0.0


def verdict(table: dict, variant: str, metric: str = "macro") -> str:
    """One line on `variant` against the baseline, e.g. "+classifier beats raw by 0.041 bpb, 5.2x the seed std
    (3 seeds, paired p 0.004)"."""
    baseline = table["baseline"]
    result = table["variants"][variant]["vs_baseline"][metric]
    seeds, snr = result["pairs"], result["snr"]
    where = "" if metric == "macro" else f" on {metric}"
    if snr is None:
        measured = "" if result["difference"] is None else f"{result['difference']:+.4f} bpb, "
        return (f"{variant} vs {baseline}{where}: not called ({measured}{seeds} seeds in common; weighing a "
                f"difference against seed noise takes at least 2 seeds whose scores differ)")
    paired = "" if result["p_value"] is None else f", paired p {result['p_value']:.3f}"
    if snr < SNR_THRESHOLD:
        return (f"{variant} vs {baseline}{where}: no difference beyond seed noise ({result['difference']:+.4f} bpb, "
                f"{snr:.1f}x the seed std, {seeds} seeds{paired})")
    winner, loser = (variant, baseline) if result["difference"] < 0 else (baseline, variant)
    return (f"{winner} beats {loser}{where} by {abs(result['difference']):.4f} bpb, {snr:.1f}x the seed std "
            f"({seeds} seeds{paired})")


def table_markdown(table: dict) -> str:
    """Mean +- std per variant and metric, then the difference to the baseline with its snr and p."""
    metrics = table["metrics"]
    lines = ["| variant | " + " | ".join(f"{m} bpb" for m in metrics) + " | vs baseline (macro) | snr | p |",
             "|---|" + "---|" * (len(metrics) + 3)]
    for name, row in table["variants"].items():
        cells = [f"{row['metrics'][m]['mean']:.4f} ± {row['metrics'][m]['std']:.4f}" for m in metrics]
        versus = row.get("vs_baseline", {}).get("macro")
        extra = ["(baseline)", "", ""] if versus is None else [
            _number(versus["difference"], "+.4f"), _number(versus["snr"], ".1f"),
            _number(versus["p_value"], ".3f")]
        lines.append(f"| {name} | " + " | ".join(cells + extra) + " |")
    return "\n".join(lines)


def _number(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def rounded(value: float | None, digits: int) -> float | None:
    """round(), passing None through (a figure a comparison could not give)."""
    return None if value is None else round(value, digits)
