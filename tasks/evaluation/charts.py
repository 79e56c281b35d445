"""The ablation's two charts, read at a glance: macro bits per byte against training tokens per variant (mean
line, band of ± one seed std), and bits per byte per domain per variant (bars with seed-std error bars)."""
from __future__ import annotations

import numpy as np

from tasks.charts import default_style, new_figure, save_png


def curves_png(histories: dict[str, dict[int, list[tuple[int, float]]]], path: str,
               metric: str = "macro") -> str:
    """`histories`: variant -> seed -> [(training tokens, bpb)], the evaluations of each run."""
    with default_style():
        fig = new_figure((7.5, 4.5))
        axes = fig.add_subplot()
        for variant, seeds in histories.items():
            points = sorted(set.intersection(*(set(tokens for tokens, _ in curve) for curve in seeds.values())))
            if not points:
                continue
            values = np.array([[dict(curve)[tokens] for tokens in points] for curve in seeds.values()])
            mean, std = values.mean(axis=0), values.std(axis=0, ddof=1) if len(values) > 1 else np.zeros(len(points))
            line, = axes.plot(points, mean, marker="o", markersize=3, label=f"{variant} ({len(values)} seeds)")
            axes.fill_between(points, mean - std, mean + std, color=line.get_color(), alpha=0.2)
        axes.set_xlabel("training tokens")
        axes.set_ylabel(f"{metric} bits per byte (lower is better)")
        axes.set_title("Held-out evaluation suite during training (band: ± seed std)")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
        return save_png(fig, path)


def domain_bars_png(table: dict, path: str) -> str:
    """Bars per domain (and macro) for each variant, from `compare(...)`'s table."""
    metrics, variants = table["metrics"], list(table["variants"])
    with default_style():
        fig = new_figure((max(6.0, 1.6 * len(metrics) * max(1, len(variants)) / 2), 4.5))
        axes = fig.add_subplot()
        width = 0.8 / len(variants)
        for index, variant in enumerate(variants):
            cells = table["variants"][variant]["metrics"]
            positions = np.arange(len(metrics)) + (index - (len(variants) - 1) / 2) * width
            axes.bar(positions, [cells[m]["mean"] for m in metrics], width, yerr=[cells[m]["std"] for m in metrics],
                     capsize=3, label=variant)
        axes.set_xticks(np.arange(len(metrics)), metrics)
        axes.set_ylabel("bits per byte (lower is better)")
        low = min(table["variants"][v]["metrics"][m]["mean"] for v in variants for m in metrics)
        high = max(table["variants"][v]["metrics"][m]["mean"] for v in variants for m in metrics)
        axes.set_ylim(max(0.0, low - 0.15 * (high - low + 0.1)), high + 0.15 * (high - low + 0.1))
        axes.set_title(f"Bits per byte per domain (error bars: seed std; baseline {table['baseline']})")
        axes.grid(axis="y", alpha=0.3)
        axes.legend(fontsize=8)
        return save_png(fig, path)
