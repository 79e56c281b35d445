"""The MinHash-LSH dedup report a person reads at a glance: S-curve, cluster sizes, example clusters.

Pure functions, no Prefect or MLflow: the caller logs what they return (PNG paths, table rows, markdown).
matplotlib (Agg, through `Figure` directly, so no pyplot global state) is imported inside the functions that draw,
so importing this module stays cheap.

Charts are deterministic: the same arguments give the same PNG bytes (matplotlib's default style whatever the
local matplotlibrc says, fixed size and dpi, no "Software" metadata).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tracking.charts import default_style, new_figure, save_png

DEFAULT_POINTS: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)

_FIGSIZE = (7.0, 4.5)
_UNIT_BINS_MAX = 50          # up to this many distinct sizes: one bar per size; beyond: integer log-spaced bins
_MAX_MEMBERS = 4             # members shown side by side per example cluster
_URL_CHARS = 48              # shortened URL length in the example table headers


def _check_lsh(bands: int, rows: int) -> None:
    if int(bands) != bands or int(rows) != rows or bands < 1 or rows < 1:
        raise ValueError(f"bands and rows must be positive integers, got bands={bands!r} rows={rows!r}")


def _check_unit(name: str, value: float) -> None:
    if not (0.0 <= value <= 1.0):      # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


def detection_probability(jaccard: float, bands: int, rows: int) -> float:
    """Probability that a pair with this Jaccard similarity shares at least one LSH band: 1 - (1 - j^r)^b."""
    _check_lsh(bands, rows)
    _check_unit("jaccard", jaccard)
    return 1.0 - (1.0 - float(jaccard) ** rows) ** bands


def s_curve_knee(bands: int, rows: int) -> float:
    """(1/b)^(1/r): the Jaccard similarity near which the S-curve rises steepest."""
    _check_lsh(bands, rows)
    return (1.0 / bands) ** (1.0 / rows)


def expected_error_rates(bands: int, rows: int, threshold: float) -> dict[str, float]:
    """The error integrals datasketch minimises when it picks (bands, rows) for a threshold.

    `false_positive`: area under the S-curve for Jaccard in [0, threshold]; `false_negative`: area above it
    (1 - P) for Jaccard in [threshold, 1] -- datasketch's `_false_positive_probability` /
    `_false_negative_probability`, unweighted. They are areas, not per-pair rates: each is at most the width
    of its interval. `probability_at_threshold` is the detection probability of a pair exactly at the threshold.
    """
    _check_lsh(bands, rows)
    _check_unit("threshold", threshold)
    return {
        "false_positive": _area(bands, rows, 0.0, threshold, missed=False),
        "false_negative": _area(bands, rows, threshold, 1.0, missed=True),
        "probability_at_threshold": detection_probability(threshold, bands, rows),
    }


def _area(bands: int, rows: int, low: float, high: float, missed: bool) -> float:
    """The integral over [low, high] of P(j) = 1 - (1 - j^r)^b, or of 1 - P with `missed`. Both are polynomials of
    degree r b, which Gauss-Legendre quadrature on r b / 2 + 1 nodes integrates exactly. (datasketch integrates
    them with scipy's quad; importing the two in the flow process took 0.2-0.5 s of the dedup stage's report.)"""
    nodes, weights = np.polynomial.legendre.leggauss(rows * bands // 2 + 1)
    jaccard = (high - low) / 2 * nodes + (high + low) / 2
    missed_share = (1.0 - jaccard ** rows) ** bands
    return float((high - low) / 2 * np.dot(weights, missed_share if missed else 1.0 - missed_share))


def s_curve_rows(bands: int, rows: int, points: Iterable[float] = DEFAULT_POINTS) -> list[dict[str, float]]:
    """Table rows `{"jaccard", "detection_probability"}` (probability rounded to 4 places) at the given points."""
    return [{"jaccard": float(j), "detection_probability": round(detection_probability(j, bands, rows), 4)}
            for j in points]


def s_curve_png(bands: int, rows: int, threshold: float, path: str | os.PathLike) -> str:
    """Detection probability vs Jaccard (0..1) with the threshold and expected FP/FN areas; writes a PNG to `path`."""
    import numpy as np

    rates = expected_error_rates(bands, rows, threshold)
    js = np.linspace(0.0, 1.0, 501)
    ps = 1.0 - (1.0 - js ** rows) ** bands
    with default_style():
        fig = new_figure(_FIGSIZE)
        ax = fig.add_subplot()
        ax.plot(js, ps, color="tab:blue", linewidth=2, label="P(candidate pair)")
        below, above = js <= threshold, js >= threshold
        ax.fill_between(js[below], 0.0, ps[below], color="tab:red", alpha=0.2,
                        label=f"false-positive area {rates['false_positive']:.4f}")
        ax.fill_between(js[above], ps[above], 1.0, color="tab:orange", alpha=0.2,
                        label=f"false-negative area {rates['false_negative']:.4f}")
        ax.axvline(threshold, color="black", linestyle="--", linewidth=1,
                   label=f"threshold {threshold:g} (P = {rates['probability_at_threshold']:.3f})")
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel("Jaccard similarity")
        ax.set_ylabel("detection probability")
        ax.set_title(f"MinHash LSH S-curve: {bands} bands x {rows} rows ({bands * rows} permutations)\n"
                     f"expected FP {rates['false_positive']:.4f}, FN {rates['false_negative']:.4f}",
                     fontsize=11)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
        return save_png(fig, path)


def _size_bins(lo: int, hi: int) -> tuple[list[float], bool]:
    """Bin edges on half-integers (each bin holds whole sizes); log-spaced when the range is wide."""
    if hi - lo + 1 <= _UNIT_BINS_MAX:
        return [k - 0.5 for k in range(lo, hi + 2)], False
    import numpy as np

    ints = np.unique(np.round(np.geomspace(lo, hi + 1, _UNIT_BINS_MAX + 1)).astype(int))
    edges = [float(k) - 0.5 for k in ints]
    if edges[-1] < hi + 0.5:
        edges.append(hi + 0.5)
    return edges, True


def cluster_size_histogram_png(sizes: Sequence[int], path: str | os.PathLike) -> str:
    """Histogram of duplicate-cluster sizes (sizes < 2 are not clusters and are ignored); writes a PNG to `path`.

    One bar per size when there are at most 50 distinct sizes in range, else integer-aligned log-spaced bins on
    a log size axis. The count axis is logarithmic when the bar counts span more than two decades.
    """
    import numpy as np

    clusters = sorted(int(s) for s in sizes if int(s) >= 2)
    with default_style():
        fig = new_figure(_FIGSIZE)
        ax = fig.add_subplot()
        ax.set_xlabel("cluster size (documents)")
        ax.set_ylabel("clusters")
        if not clusters:
            ax.set_title("Duplicate cluster sizes", fontsize=11)
            ax.text(0.5, 0.5, "no duplicate clusters", transform=ax.transAxes,
                    ha="center", va="center", fontsize=14, color="gray")
            ax.set_xticks([])
            ax.set_yticks([])
            return save_png(fig, path)

        edges, log_x = _size_bins(clusters[0], clusters[-1])
        counts, _ = np.histogram(clusters, bins=edges)
        nonzero = counts[counts > 0]
        log_y = nonzero.max() / nonzero.min() > 100
        ax.hist(clusters, bins=edges, color="tab:blue", edgecolor="white", linewidth=0.5)
        if log_x:
            ax.set_xscale("log")
        else:
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if log_y:
            ax.set_yscale("log")
        else:
            from matplotlib.ticker import MaxNLocator

            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        docs = sum(clusters)
        ax.set_title(f"Duplicate cluster sizes: {len(clusters)} clusters, {docs} documents "
                     f"(largest {clusters[-1]})", fontsize=11)
        ax.grid(True, axis="y", alpha=0.3)
        return save_png(fig, path)


_NEWLINES = re.compile(r"\s*(?:\r\n|\r|\n)+\s*")


def _cell(value: object) -> str:
    """Text safe inside a GFM table cell: one line, backslashes and pipes escaped."""
    text = _NEWLINES.sub(" / ", str(value)).replace("\t", " ")
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _short_url(url: str, limit: int = _URL_CHARS) -> str:
    short = re.sub(r"^[a-z][a-z0-9+.-]*://(www\.)?", "", url.strip(), flags=re.IGNORECASE)
    if len(short) <= limit:
        return short
    head = limit * 2 // 3
    return short[:head] + "…" + short[-(limit - head - 1):]


def _status(member: dict[str, Any]) -> str:
    if member.get("kept"):
        return "**kept**"
    reason = member.get("reason")
    return f"dropped ({reason})" if reason else "dropped"


def _excerpt(text: object, max_chars: int) -> str:
    text = "" if text is None else str(text)
    return text[:max_chars] + ("…" if len(text) > max_chars else "")


def example_clusters_markdown(clusters: Sequence[Sequence[dict[str, Any]]], max_chars: int = 300) -> str:
    """Markdown: one table per duplicate cluster, members side by side (one column each after a label column).

    Each member is a dict with `id`, `url`, `kept` (bool), `reason` (str or None) and `text`. The header is the
    shortened URL (scheme and `www.` dropped); rows give the id, kept / drop reason and the first `max_chars`
    characters of the text (newlines shown as " / ", pipes and backslashes escaped). Kept members are shown first,
    then the others in the given order; at most 4 members per cluster, with a line saying how many more there are.
    """
    if not clusters:
        return "_No duplicate clusters._\n"
    parts: list[str] = []
    for number, members in enumerate(clusters, start=1):
        members = list(members)
        kept = sum(1 for m in members if m.get("kept"))
        parts.append(f"### Cluster {number}: {len(members)} documents ({kept} kept, {len(members) - kept} dropped)")
        parts.append("")
        if not members:
            parts.append("_empty cluster_")
            parts.append("")
            continue
        shown = sorted(members, key=lambda m: not m.get("kept"))[:_MAX_MEMBERS]   # stable: kept first
        header = ["", *(_cell(_short_url(str(m.get("url") or m.get("id") or "?"))) for m in shown)]
        rows = [
            ["id", *(_cell(f"`{m.get('id')}`") for m in shown)],
            ["kept / reason", *(_cell(_status(m)) for m in shown)],
            ["text", *(_cell(_excerpt(m.get("text"), max_chars)) for m in shown)],
        ]
        parts.append("| " + " | ".join(header) + " |")
        parts.append("|" + "|".join(["---"] * len(header)) + "|")
        parts.extend("| " + " | ".join(row) + " |" for row in rows)
        hidden = len(members) - len(shown)
        if hidden:
            parts.append("")
            parts.append(f"_… and {hidden} more member{'s' if hidden != 1 else ''} not shown._")
        parts.append("")
    return "\n".join(parts)


__all__ = [
    "DEFAULT_POINTS",
    "cluster_size_histogram_png",
    "detection_probability",
    "example_clusters_markdown",
    "expected_error_rates",
    "s_curve_png",
    "s_curve_rows",
]
