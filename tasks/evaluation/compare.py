"""The ablation's statistics: per variant, the mean and standard deviation over seeds of bits per byte per domain
and macro; each variant against the baseline and against the variant before it (an incremental step), paired by
seed; and one verdict line per comparison that says what a user can act on. Lower bits per byte is better.

A comparison is called when a two-sided paired t-test over the seeds both variants have gives p < alpha: the
paired differences carry the noise that matters (what two variants share, such as a document both draw the same
way, cancels in them). Every comparison also states its power:
- `mde`, the minimum detectable effect: the difference a two-sided paired t-test at this alpha calls with
  probability `power` (0.8), from the comparison's own paired noise and seed count, solved exactly on the
  noncentral t distribution (the textbook shortcut (t_{1-alpha/2} + t_{power}) x std / sqrt(n) gives only 0.77
  power at 3 seeds);
- `seeds_to_resolve`: the fewest seeds whose detectable effect is at most the observed difference (at the same
  paired noise), so a user knows what more seeds would buy.
A comparison that is not called is one of two cases: *underpowered* when the observed difference would be
resolved within `seed_cap` seeds, else *bounded*: no difference larger than the mde, which is what more seeds
could not change within reach. The seed std (the pooled standard deviation of the two variants, the noise between
two runs of one recipe) and snr = |difference| / seed std are reported beside it. With fewer than two seeds in
common, or seeds whose differences do not vary, there is no noise to weigh a difference against: nothing is
called and the verdict says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize
from scipy import stats as scipy_stats

MOST_SEEDS_CONSIDERED = 1000      # seeds_to_resolve beyond this is reported as None


@dataclass(frozen=True)
class Power:
    """The test a verdict applies and the power it states. `alpha`: the paired t-test's level at this look (a
    sequential ablation spends its alpha over its looks); `seed_cap`: the most seeds the ablation would run."""
    alpha: float = 0.05
    power: float = 0.8
    seed_cap: int = 10


@dataclass(frozen=True)
class RunScore:
    variant: str
    seed: int
    bpb: dict[str, float]       # domain -> bits per byte, plus "macro"


def compare(runs: list[RunScore], variants: list[str], baseline: str, power: Power = Power()) -> dict:
    """The comparison table as a dict: `variants` (in the given order) with per-metric mean / std / n and, for
    all but the baseline, `vs_baseline` per metric (`paired_difference`); for all but the first, `vs_previous`
    against the variant before it."""
    by_variant = {name: {run.seed: run.bpb for run in runs if run.variant == name} for name in variants}
    missing = [name for name, seeds in by_variant.items() if not seeds]
    if missing:
        raise ValueError(f"no finished runs for variants {missing}")
    metrics = sorted({metric for run in runs for metric in run.bpb}, key=lambda m: (m == "macro", m))
    table = {}
    for index, name in enumerate(variants):
        seeds = by_variant[name]
        row = {"seeds": sorted(seeds), "metrics": {}}
        for metric in metrics:
            values = np.array([seeds[seed][metric] for seed in sorted(seeds)])
            row["metrics"][metric] = {"mean": float(values.mean()), "std": _std(values), "n": int(values.size)}
        if name != baseline:
            row["vs_baseline"] = {metric: paired_difference(seeds, by_variant[baseline], metric, power)
                                  for metric in metrics}
        if index:
            row["vs_previous"] = {metric: paired_difference(seeds, by_variant[variants[index - 1]], metric, power)
                                  for metric in metrics}
        table[name] = row
    return {"baseline": baseline, "metrics": metrics, "variants": table, "power": power.__dict__.copy()}


def paired_difference(variant: dict[int, dict], baseline: dict[int, dict], metric: str,
                      power: Power = Power()) -> dict:
    """variant - baseline over the seeds both have (negative: the variant is better): `difference`, `paired_std`
    (of the per-seed differences), `seed_std`, `snr`, `p_value`, `called`, `mde` and `seeds_to_resolve`; a figure
    those seeds cannot give is None."""
    shared = sorted(set(variant) & set(baseline))
    ours = np.array([variant[seed][metric] for seed in shared])
    theirs = np.array([baseline[seed][metric] for seed in shared])
    differences = ours - theirs
    mean = float(differences.mean()) if shared else None
    pooled = math.sqrt((_std(ours) ** 2 + _std(theirs) ** 2) / 2) if len(shared) >= 2 else None
    paired = _std(differences) if len(shared) >= 2 else None
    p_value = mde = needed = None
    if paired:
        p_value = float(scipy_stats.ttest_rel(ours, theirs).pvalue)
        mde = detectable_effect(paired, len(shared), power)
        needed = seeds_to_resolve(mean, paired, power)
    return {"difference": mean, "paired_std": paired, "seed_std": pooled,
            "snr": abs(mean) / pooled if pooled else None, "p_value": p_value,
            "called": p_value is not None and p_value < power.alpha, "mde": mde, "seeds_to_resolve": needed,
            "pairs": len(shared)}


def detectable_effect(paired_std: float, pairs: int, power: Power = Power()) -> float:
    """The difference a two-sided paired t-test at `power.alpha` over `pairs` seeds calls with probability
    `power.power`, at this paired noise: the effect whose noncentrality sqrt(n) x effect / std gives that power."""
    if pairs < 2:
        raise ValueError(f"a paired test needs at least 2 pairs, got {pairs}")
    return paired_std * _unit_effect(pairs, power.alpha, power.power)


@lru_cache(maxsize=4096)
def _unit_effect(pairs: int, alpha: float, power: float) -> float:
    """The detectable effect at a paired std of 1 (it scales with the std)."""
    df = pairs - 1
    critical = scipy_stats.t.ppf(1 - alpha / 2, df)
    high = critical + 1.0
    while two_sided_power(high, df, critical) < power:
        high *= 2
    noncentrality = optimize.brentq(lambda nc: two_sided_power(nc, df, critical) - power, 0.0, high, xtol=1e-10)
    return float(noncentrality / math.sqrt(pairs))


def two_sided_power(noncentrality: float, df: int, critical: float) -> float:
    """P(|T| > critical) for T noncentral t with `df` degrees of freedom: a two-sided t-test's power. (The far
    tail comes back NaN from scipy where it is below 1e-16.)"""
    far = float(scipy_stats.nct.cdf(-critical, df, noncentrality))
    return float(scipy_stats.nct.sf(critical, df, noncentrality)) + (0.0 if math.isnan(far) else far)


def seeds_to_resolve(effect: float, paired_std: float, power: Power = Power()) -> int | None:
    """The fewest seeds whose detectable effect is at most |effect| at this paired noise; None beyond
    MOST_SEEDS_CONSIDERED (or for no effect at all)."""
    if not effect:
        return None
    low, high = 2, MOST_SEEDS_CONSIDERED         # the detectable effect falls as seeds are added
    if detectable_effect(paired_std, high, power) > abs(effect):
        return None
    while low < high:
        middle = (low + high) // 2
        if detectable_effect(paired_std, middle, power) <= abs(effect):
            high = middle
        else:
            low = middle + 1
    return low


def noise_shares(values: dict[str, list[float]]) -> dict[str, dict]:
    """Per seed control, the std over seeds of a score with that control alone varying, and its share of the
    variances summed over the controls (the variance split)."""
    rows = {control: {"seeds": len(scores), "std": _std(np.asarray(scores))} for control, scores in values.items()}
    total = sum(row["std"] ** 2 for row in rows.values())
    for row in rows.values():
        row["share"] = row["std"] ** 2 / total if total else None
    return rows


def _std(values: np.ndarray) -> float:
    return float(values.std(ddof=1)) if values.size > 1 else 0.0


def verdict(table: dict, variant: str, metric: str = "macro", against: str = "vs_baseline") -> str:
    """One line on `variant` against the baseline (or, with against="vs_previous", the variant before it), e.g.
    "+classifier beats raw by 0.0410 bpb, 5.2x the seed std (3 seeds, paired p 0.004; detectable 0.0213)"."""
    names = list(table["variants"])
    other = table["baseline"] if against == "vs_baseline" else names[names.index(variant) - 1]
    result = table["variants"][variant][against][metric]
    power = Power(**table["power"])
    seeds, difference = result["pairs"], result["difference"]
    where = "" if metric == "macro" else f" on {metric}"
    if result["p_value"] is None:
        measured = "" if difference is None else f"{difference:+.4f} bpb, "
        return (f"{variant} vs {other}{where}: not called ({measured}{seeds} seeds in common; weighing a "
                f"difference against seed noise takes at least 2 seeds whose differences vary)")
    tested = f"{seeds} seeds, paired p {result['p_value']:.3f}"
    if result["called"]:
        winner, loser = (variant, other) if difference < 0 else (other, variant)
        return (f"{winner} beats {loser}{where} by {abs(difference):.4f} bpb, {result['snr']:.1f}x the seed std "
                f"({tested}; detectable {result['mde']:.4f})")
    needed = result["seeds_to_resolve"]
    if needed is not None and needed <= power.seed_cap:
        return (f"{variant} vs {other}{where}: underpowered ({difference:+.4f} bpb, {tested}; {seeds} seeds detect "
                f"{result['mde']:.4f}): about {needed} seeds would resolve a difference of this size")
    return (f"{variant} vs {other}{where}: no difference larger than {result['mde']:.4f} bpb ({difference:+.4f} "
            f"observed, {tested}; {seeds} seeds call {result['mde']:.4f} {power.power:.0%} of the time at alpha "
            f"{power.alpha:.3g})")


def table_markdown(table: dict) -> str:
    """Mean +- std per variant and metric, then the macro difference to the baseline with its snr, p and minimum
    detectable effect."""
    metrics = table["metrics"]
    lines = ["| variant | " + " | ".join(f"{m} bpb" for m in metrics) + " | vs baseline (macro) | snr | p | detectable |",
             "|---|" + "---|" * (len(metrics) + 4)]
    for name, row in table["variants"].items():
        cells = [f"{row['metrics'][m]['mean']:.4f} ± {row['metrics'][m]['std']:.4f}" for m in metrics]
        versus = row.get("vs_baseline", {}).get("macro")
        extra = ["(baseline)", "", "", ""] if versus is None else [
            _number(versus["difference"], "+.4f") + (" *" if versus["called"] else ""), _number(versus["snr"], ".1f"),
            _number(versus["p_value"], ".3f"), _number(versus["mde"], ".4f")]
        lines.append(f"| {table_label(table, name)} | " + " | ".join(cells + extra) + " |")
    return "\n".join(lines)


def steps_markdown(table: dict) -> str:
    """Each variant against the one before it, per metric: the difference, its minimum detectable effect, and a *
    where it is called (the incremental attribution: which step helps, hurts, or does nothing detectable)."""
    metrics = table["metrics"]
    lines = ["| step | " + " | ".join(f"{m} Δ (detectable)" for m in metrics) + " |", "|---|" + "---|" * len(metrics)]
    names = list(table["variants"])
    for before, name in zip(names, names[1:]):
        step = table["variants"][name]["vs_previous"]
        cells = [_number(step[m]["difference"], "+.4f") + (" *" if step[m]["called"] else "")
                 + (f" ({step[m]['mde']:.4f})" if step[m]["mde"] is not None else "") for m in metrics]
        lines.append(f"| {before} → {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table_label(table: dict, name: str) -> str:
    """A variant's name, marked where some of its runs were trained by another version of the trainer's code."""
    older = table.get("older_code", {}).get(name)
    return f"{name} ({len(older)} of {len(table['variants'][name]['seeds'])} runs by other trainer code)" if older else name


def _number(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def rounded(value: float | None, digits: int) -> float | None:
    """round(), passing None through (a figure a comparison could not give)."""
    return None if value is None else round(value, digits)
