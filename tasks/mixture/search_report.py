"""What a mixture search leaves for people: the domains with their natural shares, caps, trust region and proposed
weights; the swarm with each member's measured and held-out predicted loss; the fit's error; the predicted and
realized gain of the proposal; the validation's verdicts; and two charts (predicted against measured for the swarm,
the proposed weights against the natural ones)."""
from __future__ import annotations

import numpy as np

from tracking.charts import default_style, new_figure, save_png


def predicted_vs_measured_png(measured: list[float], predicted: list[float], target: str, path: str) -> str:
    """Each swarm member's measured loss against the law's prediction fitted without it (leave-one-out)."""
    with default_style():
        fig = new_figure((5.0, 5.0))
        axes = fig.add_subplot()
        axes.scatter(measured, predicted, s=18)
        low, high = min(*measured, *predicted), max(*measured, *predicted)
        axes.plot([low, high], [low, high], color="grey", linewidth=1, linestyle="--", label="prediction = measured")
        axes.set_xlabel(f"measured {target} bits per byte")
        axes.set_ylabel("predicted (fitted without the member)")
        axes.set_title("Swarm: the law on members it did not see")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
        return save_png(fig, path)


def weights_png(domains: list[str], mixtures: dict[str, list[float]], path: str) -> str:
    """Each named mixture's weight per domain, side by side (natural first)."""
    positions = np.arange(len(domains))
    width = 0.8 / len(mixtures)
    with default_style():
        fig = new_figure((max(5.0, 0.9 * len(domains) + 2), 3.8))
        axes = fig.add_subplot()
        for index, (name, weights) in enumerate(mixtures.items()):
            axes.bar(positions + (index - (len(mixtures) - 1) / 2) * width, weights, width, label=name)
        axes.set_xticks(positions, domains, rotation=45 if len(domains) > 8 else 0)
        axes.set_ylabel("share of training tokens")
        axes.set_title("Mixture weights by domain")
        axes.legend(fontsize=8)
        return save_png(fig, path)


def search_markdown(result: dict) -> str:
    """The report: `result` as `flows.mix_search` returns it."""
    target, domains = result["target"], result["domains"]
    lines = [f"# Mixture search {result['name']}", "",
             f"{len(result['swarm']['members'])} proxy runs of {result['swarm']['tokens']:,} tokens over "
             f"{len(domains['ids'])} {result['column']} domains; {result['law']} law fitted to {target} bits per "
             f"byte: held-out rank correlation {_number(result['fit'][target]['rank_correlation'], '.3f')}, mean "
             f"absolute error {result['fit'][target]['mean_absolute_error']:.4f}.", "",
             "| domain | tokens | natural | cap | trust region | uniform | proposed |",
             "|---|---|---|---|---|---|---|"]
    region = result["trust_region"]
    for index, name in enumerate(domains["names"]):
        lines.append(f"| {name} | {domains['tokens'][index]:,} | {domains['natural'][index]:.3f} | "
                     f"{domains['caps'][index]:.3f} | {region['lower'][index]:.3f}-{region['upper'][index]:.3f} | "
                     f"{result['mixtures']['uniform'][index]:.3f} | {result['mixtures']['proposed'][index]:.3f} |")
    lines += ["", f"Trust region: {region['floor']:g}-{region['ceiling']:g} x the natural shares"
              + (", widened to the swarm's weights (the law ranked held-out runs at least "
                 f"{region['reliable']:g})." if region["widened"] else
                 f" (the law ranked held-out runs below {region['reliable']:g}: not widened)."), "",
              f"Predicted {target} bits per byte: " + ", ".join(
                  f"{name} {value:.4f}" for name, value in result["predicted"].items())
              + f"; predicted gain of proposed over natural {result['predicted_gain']:+.4f}.", "",
        "| fitted to | held-out rank correlation | held-out mean absolute error |", "|---|---|---|",
        *[f"| {metric} | {_number(fit['rank_correlation'], '.3f')} | {fit['mean_absolute_error']:.4f} |"
          for metric, fit in result["fit"].items()], "",
        "## Swarm", "", "| member | " + " | ".join(domains["names"]) + f" | measured {target} | predicted |",
        "|---|" + "---|" * (len(domains["names"]) + 2)]
    for member in result["swarm"]["members"]:
        lines.append(f"| {member['name']} | " + " | ".join(f"{weight:.3f}" for weight in member["weights"])
                     + f" | {member['measured'][target]:.4f} | {member['predicted']:.4f} |")
    validation = result.get("validation")
    if validation:
        lines += ["", "## Validation (matched tokens and seeds)", "",
                  f"Gain of proposed over natural on {target}: predicted {result['predicted_gain']:+.4f}, realized "
                  f"{validation['realized_gain']:+.4f} bits per byte (detectable "
                  f"{_number(validation['minimum_detectable_effect'], '.4f')}, {len(validation['seeds'])} seeds; the "
                  f"predicted gain would take {validation['seeds_to_resolve_predicted_gain'] or 'more than 1,000'} "
                  "seeds to resolve at this noise).",
                  "", *[f"- {line}" for line in validation["verdicts"].values()]]
    return "\n".join(lines)


def _number(value: float | None, spec: str) -> str:
    return "n/a" if value is None or np.isnan(value) else format(value, spec)
