"""The ablation's two charts, read at a glance: macro bits per byte against training tokens per variant (mean
line, band of ± one seed std), and per domain each variant's difference to the baseline (bars with seed-std
error bars)."""
from __future__ import annotations

import numpy as np

from tracking.charts import default_style, new_figure, save_png


def curves_png(histories: dict[str, dict[int, list[tuple[int, float]]]], variants: list[str], path: str,
               metric: str = "macro") -> str:
    """`histories`: variant -> seed -> [(training tokens, bpb)], the evaluations of each run; `variants` gives
    the order (and so the colours, the same in both charts)."""
    with default_style():
        fig = new_figure((7.5, 4.5))
        axes = fig.add_subplot()
        for index, variant in enumerate(variants):
            points, values = seed_curves(histories.get(variant, {}))
            if not points:
                continue
            mean, std = values.mean(axis=0), values.std(axis=0, ddof=1) if len(values) > 1 else np.zeros(len(points))
            axes.plot(points, mean, marker="o", markersize=3, color=f"C{index}", label=f"{variant} ({len(values)} seeds)")
            axes.fill_between(points, mean - std, mean + std, color=f"C{index}", alpha=0.2)
        axes.set_xlabel("training tokens")
        axes.set_ylabel(f"{metric} bits per byte (lower is better)")
        axes.set_title("Held-out evaluation suite during training (band: ± seed std)")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
        return save_png(fig, path)


def seed_curves(seeds: dict[int, list[tuple[int, float]]]) -> tuple[list[int], np.ndarray]:
    """The seeds' curves on one token axis: every evaluation point in the range all seeds cover, each curve
    interpolated linearly where it was not evaluated there (under a batch ramp the seeds' updates, and so their
    evaluations, fall at different token counts). (points, seeds x points values); ([], empty) without a range."""
    curves = [sorted(curve) for curve in seeds.values() if curve]
    low = max((curve[0][0] for curve in curves), default=0)
    high = min((curve[-1][0] for curve in curves), default=-1)
    points = sorted({tokens for curve in curves for tokens, _ in curve if low <= tokens <= high})
    if not points:
        return [], np.empty((0, 0))
    return points, np.array([np.interp(points, [tokens for tokens, _ in curve], [value for _, value in curve])
                             for curve in curves])


def domain_bars_png(table: dict, path: str) -> str:
    """Per domain (and macro), each variant's mean difference to the baseline in bits per byte, with the pooled
    seed std as error bar: below zero the variant is better. Differences share one scale where absolute bits per
    byte differ by domain more than the recipes do."""
    metrics = table["metrics"]
    colours = {name: f"C{index}" for index, name in enumerate(table["variants"])}
    variants = [name for name, row in table["variants"].items() if "vs_baseline" in row]
    with default_style():
        fig = new_figure((9.0, 4.5))
        axes = fig.add_subplot()
        width = 0.8 / max(1, len(variants))
        for index, variant in enumerate(variants):
            versus = table["variants"][variant]["vs_baseline"]
            positions = np.arange(len(metrics)) + (index - (len(variants) - 1) / 2) * width
            axes.bar(positions, [_drawn(versus[m]["difference"]) for m in metrics], width,
                     yerr=[_drawn(versus[m]["seed_std"]) for m in metrics], capsize=3, color=colours[variant],
                     label=variant)
        axes.axhline(0.0, color="black", linewidth=0.8)
        axes.set_xticks(np.arange(len(metrics)), metrics)
        axes.set_ylabel(f"bits per byte minus {table['baseline']}'s")
        axes.set_title(f"Difference to {table['baseline']} per domain (below 0: better; error bars: seed std)")
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize=8)
        return save_png(fig, path)


def _drawn(value: float | None) -> float:
    """A figure the comparison could not give (one seed: no seed std) is left out of the chart."""
    return np.nan if value is None else value


def steps_png(table: dict, path: str) -> str:
    """Per domain (and macro), each incremental step's difference (a variant minus the one before it) as a bar,
    with its minimum detectable effect as a ± band: a bar that leaves its band by far is called (drawn solid),
    one inside it is noise at this many seeds (drawn pale)."""
    metrics = table["metrics"]
    names = list(table["variants"])
    pairs = list(zip(names, names[1:]))
    with default_style():
        fig = new_figure((9.5, 4.5))
        axes = fig.add_subplot()
        width = 0.8 / max(1, len(pairs))
        for index, (before, after) in enumerate(pairs):
            step = table["variants"][after]["vs_previous"]
            positions = np.arange(len(metrics)) + (index - (len(pairs) - 1) / 2) * width
            colour = f"C{names.index(after)}"
            differences = [_drawn(step[m]["difference"]) for m in metrics]
            bars = axes.bar(positions, differences, width, color=colour, label=f"{before} → {after}")
            for bar, metric in zip(bars, metrics):
                bar.set_alpha(1.0 if step[metric]["called"] else 0.35)
            axes.errorbar(positions, np.zeros(len(metrics)), yerr=[_drawn(step[m]["mde"]) for m in metrics],
                          fmt="none", ecolor="grey", capsize=3, linewidth=1)
        axes.axhline(0.0, color="black", linewidth=0.8)
        axes.set_xticks(np.arange(len(metrics)), metrics)
        axes.set_ylabel("bits per byte minus the previous variant's")
        axes.set_title("Each step's effect per domain (below 0: better; grey: ± detectable effect; pale: not called)")
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize=8)
        return save_png(fig, path)
