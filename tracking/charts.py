"""Deterministic PNG charts for stage reports: matplotlib's Agg canvas used directly (no pyplot global state,
safe in worker threads), matplotlib's default style whatever the local matplotlibrc says, fixed size and dpi,
no "Software" metadata, so the same data gives the same bytes."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

DPI = 100


def new_figure(size: tuple[float, float], layout: str | None = "constrained"):
    """A figure on an Agg canvas. Constrained layout measures every tick label twice per save: about half the
    time of a chart of many panels, which can pass `layout=None` and fixed margins instead."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save_png(fig, path: str | os.PathLike) -> str:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return str(out)


def png_bytes(draw: Callable[..., str], *arguments) -> bytes:
    """The PNG that `draw(*arguments, path)` writes, as bytes: a chart drawn on a Dask worker comes back to the flow
    process this way (the worker may not see the report folder)."""
    with tempfile.TemporaryDirectory() as folder:
        return Path(draw(*arguments, os.path.join(folder, "chart.png"))).read_bytes()


def default_style():
    import matplotlib.style

    return matplotlib.style.context("default")
