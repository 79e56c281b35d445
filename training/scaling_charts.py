"""The scaling-law chart: the ladder's losses against tokens with the fitted curve of each size, and the fitted
law's iso-loss contours over (N, D) with the runs and the compute-optimal frontier N*(C), D*(C)."""
from __future__ import annotations

import numpy as np

from tracking.charts import default_style, new_figure, save_png
from training.scaling_law import ScalingLaw

CONTOURS = 12


def scaling_png(result: dict, path: str) -> str:
    law = ScalingLaw(**result["law"])
    points = result["points"]
    n_params = np.array([point["n_params"] for point in points], dtype=float)
    tokens = np.array([point["tokens"] for point in points], dtype=float)
    losses = np.array([point["loss"] for point in points])
    with default_style():
        fig = new_figure((11, 4.5))
        curves, contours = fig.subplots(1, 2)
        span = np.geomspace(tokens.min() / 2, tokens.max() * 2, 100)
        sizes = sorted(set(n_params))
        colours = [tuple(colour) for colour in _viridis(len(sizes))]
        for size, colour in zip(sizes, colours):
            mine = n_params == size
            curves.plot(tokens[mine], losses[mine], "o", color=colour, label=f"{size / 1e6:.2f}M")
            curves.plot(span, law.loss(size, span), "-", color=colour, linewidth=1)
        curves.set(xscale="log", xlabel="training tokens D", ylabel=result["metric"],
                   title="losses and the fitted L(N, D) per model size")
        curves.legend(title="parameters N", fontsize=8)

        grid_n = np.geomspace(n_params.min() / 4, n_params.max() * 4, 120)
        grid_d = np.geomspace(tokens.min() / 4, tokens.max() * 4, 120)
        mesh_n, mesh_d = np.meshgrid(grid_n, grid_d)
        filled = contours.contourf(mesh_n, mesh_d, law.loss(mesh_n, mesh_d), levels=CONTOURS, cmap="viridis")
        fig.colorbar(filled, ax=contours, label=f"fitted {result['metric']}")
        contours.scatter(n_params, tokens, c="white", edgecolors="black", zorder=3, label="runs")
        budgets = np.geomspace(6 * grid_n.min() * grid_d.min(), 6 * grid_n.max() * grid_d.max(), 50)
        frontier = [law.compute_optimal(budget) for budget in budgets]
        contours.plot([best["n_params"] for best in frontier], [best["tokens"] for best in frontier], "r--",
                      label="compute-optimal N*(C), D*(C)")
        contours.set(xscale="log", yscale="log", xlim=(grid_n.min(), grid_n.max()), ylim=(grid_d.min(), grid_d.max()),
                     xlabel="parameters N", ylabel="training tokens D", title="iso-loss contours of the fit")
        contours.legend(fontsize=8, loc="lower right")
        return save_png(fig, path)


def _viridis(count: int) -> list:
    from matplotlib import colormaps

    return colormaps["viridis"](np.linspace(0, 0.9, count))
