"""PNG histograms of the quality attributes with the filter's thresholds marked (the marks come from the
families: tasks/quality/families.thresholds_by_attribute), and the classifier's reliability diagram."""
from __future__ import annotations

import math
import os

from tracking.charts import default_style, new_figure, save_png


def histograms_png(histograms: dict[str, dict], marks: dict[str, list[float]], path: str) -> str:
    names = [name for name, histogram in histograms.items() if histogram["counts"]]
    columns = 3
    rows = max(1, math.ceil(len(names) / columns))
    with default_style():
        height = 2.6 * rows
        # fixed margins in inches, not constrained layout: 15 panels drew in 1.7 s with it, 1.0 s without
        fig = new_figure((12, height), layout=None)
        fig.subplots_adjust(left=0.045, right=0.99, bottom=0.35 / height, top=1 - 0.3 / height, wspace=0.18,
                            hspace=0.45)
        for position, name in enumerate(names, start=1):
            histogram = histograms[name]
            axes = fig.add_subplot(rows, columns, position)
            edges = histogram["edges"]
            axes.stairs(histogram["counts"], edges, fill=True, alpha=0.6)
            for value in marks.get(name, []):
                x = math.log10(max(value, 1.0)) if histogram["log10"] else value
                axes.axvline(x, color="tab:red", linestyle="--", linewidth=1.2)
            axes.set_title(f"{name}{' (log10)' if histogram['log10'] else ''}", fontsize=9)
            axes.tick_params(labelsize=7)
        return save_png(fig, os.fspath(path))


def reliability_png(curves: dict[str, dict], path: str) -> str:
    """Observed share of high-quality examples against the mean predicted probability per bin, one line per
    evaluation (tasks/quality/calibration.reliability); on the diagonal, a probability means what it says."""
    with default_style():
        fig = new_figure((5, 4.2))
        axes = fig.add_subplot(1, 1, 1)
        axes.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1, label="perfectly calibrated")
        for name, curve in curves.items():
            bins = curve["bins"]
            axes.plot([row["predicted"] for row in bins], [row["observed"] for row in bins], marker="o",
                      label=f"{name} (ECE {curve['ece']:.3f})")
        axes.set(xlabel="predicted P(high quality)", ylabel="observed share high quality", xlim=(0, 1), ylim=(0, 1))
        axes.legend(fontsize=7, loc="upper left")
        return save_png(fig, os.fspath(path))
