"""What an incremental ablation's runs say beyond its table, read from MLflow: the steps per domain, the data
efficiency of the last variant against the baseline, and how much noise tail averaging and the coupled draws take
out of the paired differences.

- *Steps*: each variant against the one before it, per domain and macro: difference, minimum detectable effect,
  p, called (`tasks.evaluation.compare`).
- *Tokens to match*: the tokens at which the last variant's seed-mean macro curve first reaches the baseline's
  final seed-mean macro bpb (linear between evaluations), or None with the reason.
- *Tail averaging*: a run's score as the mean of its evaluations in the last quarter of training instead of its
  last evaluation; the paired std of every comparison both ways.
- *Coupling*: the paired std of each comparison against the pooled seed std of its two arms: below 1, what the
  arms share for a seed (init, batch order, the pieces both draw) cancels in the difference.
"""
from __future__ import annotations

import numpy as np

from flows.ablation_report import histories
from tasks.evaluation.charts import seed_curves
from tasks.evaluation.compare import Power, RunScore, compare, detectable_effect

TAIL = 0.25          # the share of training whose evaluations a tail-averaged score takes


def suite_curves(parent_id: str, metrics: list[str]) -> dict[str, dict[str, dict[int, list[tuple[int, float]]]]]:
    """metric -> variant -> seed -> [(tokens, bpb)]."""
    return {metric: histories(parent_id, metric) for metric in metrics}


def scores(curves: dict, tail: bool) -> list[RunScore]:
    """Each run's score per metric: its last evaluation, or the mean of those in the last TAIL of its tokens."""
    runs: dict[tuple[str, int], dict[str, float]] = {}
    for metric, by_variant in curves.items():
        for variant, by_seed in by_variant.items():
            for seed, curve in by_seed.items():
                if not curve:
                    continue
                last = curve[-1][0]
                values = [value for tokens, value in curve if tokens >= (1 - TAIL) * last] if tail else [curve[-1][1]]
                runs.setdefault((variant, seed), {})[metric] = float(np.mean(values))
    return [RunScore(variant, seed, bpb) for (variant, seed), bpb in runs.items()]


def steps(table: dict) -> dict[str, dict]:
    """'before -> after' -> metric -> the step's figures."""
    names = list(table["variants"])
    return {f"{before} -> {after}": {metric: _figures(cell) for metric, cell
                                     in table["variants"][after]["vs_previous"].items()}
            for before, after in zip(names, names[1:])}


def _figures(cell: dict) -> dict:
    keys = ("difference", "mde", "p_value", "called", "seeds_to_resolve", "paired_std", "seed_std", "pairs")
    return {key: (round(cell[key], 5) if isinstance(cell[key], float) else cell[key]) for key in keys}


def tokens_to_match(curves: dict, baseline: str, variant: str) -> dict:
    """When the variant's seed-mean macro curve first reaches the baseline's final seed-mean macro bpb."""
    _, base_values = seed_curves(curves["macro"][baseline])
    points, values = seed_curves(curves["macro"][variant])
    target = float(base_values[:, -1].mean())
    mean = values.mean(axis=0)
    below = np.flatnonzero(mean <= target)
    if not below.size:
        return {"tokens": None, "target_bpb": round(target, 5), "final_bpb": round(float(mean[-1]), 5),
                "reason": f"{variant}'s mean curve stays above {baseline}'s final macro bpb up to {points[-1]:,} tokens"}
    first = int(below[0])
    if first == 0:
        tokens = float(points[0])
    else:         # linear between the last evaluation above the target and the first at or below it
        (x0, y0), (x1, y1) = (points[first - 1], mean[first - 1]), (points[first], mean[first])
        tokens = x0 + (y0 - target) / (y0 - y1) * (x1 - x0)
    return {"tokens": int(round(tokens)), "share_of_run": round(tokens / points[-1], 4), "target_bpb": round(target, 5),
            "evaluations": [int(point) for point in points]}


def noise(curves: dict, variants: list[str], baseline: str, power: Power) -> dict:
    """Per comparison with the baseline and per step (macro): the paired std with final and with tail-averaged
    scores, and the arms' pooled seed std (coupling)."""
    final = compare(scores(curves, tail=False), variants, baseline, power)
    tailed = compare(scores(curves, tail=True), variants, baseline, power)
    rows = {}
    for index, name in enumerate(variants):
        for against, other in (("vs_baseline", baseline), ("vs_previous", variants[index - 1] if index else None)):
            if other is None or name == baseline and against == "vs_baseline":
                continue
            end, tail = final["variants"][name][against]["macro"], tailed["variants"][name][against]["macro"]
            if not end["paired_std"] or not tail["paired_std"]:      # identical runs (a step that removed nothing)
                continue
            rows[f"{other} -> {name}"] = {
                "paired_std_final": round(end["paired_std"], 5), "paired_std_tail": round(tail["paired_std"], 5),
                "tail_over_final": round(tail["paired_std"] / end["paired_std"], 3),
                "seed_std_final": round(end["seed_std"], 5),
                "paired_over_seed_std": round(end["paired_std"] / end["seed_std"], 3),
                "difference_final": round(end["difference"], 5), "difference_tail": round(tail["difference"], 5)}
    ratios = [row["tail_over_final"] for row in rows.values()]
    coupling = [row["paired_over_seed_std"] for row in rows.values()]
    return {"comparisons": rows, "tail_share_of_tokens": TAIL,
            "median_tail_over_final": round(float(np.median(ratios)), 3) if ratios else None,
            "median_paired_over_seed_std": round(float(np.median(coupling)), 3) if coupling else None}


def token_extrapolation(curves: dict, variants: list[str], baseline: str, power: Power) -> dict:
    """How many tokens per run would resolve each uncalled comparison with the baseline (macro), extrapolated
    from the run's own evaluations, and a check of that extrapolation against a measurement.

    At each evaluation t the seeds' paired differences give a t statistic z(t) = mean / (std / sqrt(n)). A power
    law z = c t^k is fitted to the evaluations in the second half of training; the tokens per run at which z
    reaches the noncentrality that gives `power.power` at n seeds are c and k solved for it. The evaluations of
    one run are not runs of those lengths (the learning rate has not decayed at an intermediate evaluation), so
    the check fits the same law to the evaluations up to half of the run only and compares its z at the end of
    the run with the z measured there."""
    rows = {}
    for name in variants:
        if name == baseline:
            continue
        points, ours = seed_curves(curves["macro"][name])
        _, theirs = seed_curves(curves["macro"][baseline])
        pairs = min(len(ours), len(theirs))
        if pairs < 2 or ours.shape[1] != theirs.shape[1]:
            continue
        differences = ours[:pairs] - theirs[:pairs]
        if not differences.std(axis=0, ddof=1).all():
            continue
        z = np.abs(differences.mean(axis=0)) / (differences.std(axis=0, ddof=1) / np.sqrt(pairs))
        tokens = np.asarray(points, float)
        needed = detectable_effect(1.0, pairs, power) * np.sqrt(pairs)      # the noncentrality giving the power
        late, early = tokens >= tokens[-1] / 2, tokens <= tokens[-1] / 2
        fit = _power_law(tokens[late], z[late])
        check = _power_law(tokens[early], z[early])
        row = {"z_final": round(float(z[-1]), 3), "z_needed": round(float(needed), 3),
               "exponent": None if fit is None else round(fit[1], 3)}
        if fit is not None and fit[1] > 0:
            row["tokens_to_resolve"] = int(np.exp((np.log(needed) - fit[0]) / fit[1]))
        if check is not None:
            predicted = float(np.exp(check[0] + check[1] * np.log(tokens[-1])))
            row["check"] = {"fitted_on_tokens_up_to": int(tokens[early][-1]), "z_predicted_at_end": round(predicted, 3),
                            "z_measured_at_end": round(float(z[-1]), 3)}
        rows[f"{baseline} -> {name}"] = row
    return rows


def _power_law(tokens: np.ndarray, z: np.ndarray) -> tuple[float, float] | None:
    """(log c, k) of z = c t^k by least squares in log space, over the positive z; None with fewer than 2."""
    keep = z > 0
    if keep.sum() < 2:
        return None
    slope, intercept = np.polyfit(np.log(tokens[keep]), np.log(z[keep]), 1)
    return float(intercept), float(slope)
