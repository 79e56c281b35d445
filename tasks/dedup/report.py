"""What the dedup stage shows people: LSH settings and their S-curve, cluster sizes, example clusters, and the
time each step took. The two charts are drawn on the stage's cluster while its later steps run."""
from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

from configs.dedup import DedupConfig, MinHashConfig
from tasks.stage_report import StageReport
from tracking.charts import png_bytes
from tasks.dedup.charts import (cluster_size_histogram_png, example_clusters_markdown, expected_error_rates,
                                s_curve_knee, s_curve_png, s_curve_rows)
from tasks.fan_out import in_background
from storage.stage_figures import DedupFigures
from tasks.stats import StageStats

S_CURVE_PNG, CLUSTER_SIZES_PNG = "s_curve.png", "cluster_sizes.png"


def s_curve_chart(config: DedupConfig) -> dict[str, Callable[[], bytes]]:
    """The LSH S-curve (it depends on the config alone), started at the stage's start; none without MinHash."""
    if not config.minhash.enabled:
        return {}
    bands, rows = config.minhash.lsh_shape()
    return {S_CURVE_PNG: in_background(partial(png_bytes, s_curve_png, bands, rows,
                                               _threshold(config.minhash, bands, rows)))}


def cluster_sizes_chart(clusters: dict) -> dict[str, Callable[[], bytes]]:
    """The cluster-size histogram, started once the clusters are known (before the paragraph and apply steps: drawn
    after them, it left both slots waiting at the stage's end)."""
    return {CLUSTER_SIZES_PNG: in_background(partial(png_bytes, cluster_size_histogram_png, _sizes(clusters)))}


def _sizes(clusters: dict) -> list[int]:
    return [int(size) for size, count in clusters["cluster_sizes"].items() for _ in range(count)]


def _threshold(minhash: MinHashConfig, bands: int, rows: int) -> float:
    return minhash.verify_jaccard or minhash.target_jaccard or s_curve_knee(bands, rows)


def dedup_report(config: DedupConfig, stats: StageStats, figures: DedupFigures, clusters: dict, steps: list[dict],
                 charts: dict[str, Callable[[], bytes]], folder: str) -> StageReport:
    """`charts`: file name -> its PNG's bytes when asked (`s_curve_chart`, `cluster_sizes_chart`)."""
    files = []
    for name in (CLUSTER_SIZES_PNG, S_CURVE_PNG):
        if name in charts:
            files.append(os.path.join(folder, name))
            Path(files[-1]).write_bytes(charts[name]())
    tables = {"steps": steps,
              "cluster sizes": [{"size": int(size), "clusters": count}
                                for size, count in clusters["cluster_sizes"].items()]}
    lines = ["## Deduplication",
             f"- scope: {config.scope}, keep: {config.keep}, buckets per shuffle: {config.buckets}",
             f"- clusters: {clusters['clusters']} holding {clusters['documents_in_clusters']} documents "
             f"(components found in {clusters['propagation_rounds']} rounds of label propagation over the buckets); "
             f"removed: " + ", ".join(f"{reason} {count}" for reason, count in sorted(clusters["removed"].items()))]
    if config.minhash.enabled:
        bands, rows = config.minhash.lsh_shape()
        knee = s_curve_knee(bands, rows)
        threshold = _threshold(config.minhash, bands, rows)
        rates = expected_error_rates(bands, rows, threshold)
        tables["s-curve"] = s_curve_rows(bands, rows)
        lines += [f"- MinHash: {config.minhash.ngram}-word shingles ({config.minhash.character_ngram} characters for "
                  f"{', '.join(config.minhash.character_languages)}), {bands} bands x {rows} rows = {bands * rows} "
                  f"permutations, seed {config.minhash.seed}; S-curve knee (1/b)^(1/r) = {knee:.3f}",
                  f"- candidates verified at estimated Jaccard >= {config.minhash.verify_jaccard}: "
                  f"{figures.verified_pairs} of {figures.candidate_pairs} candidate pairs kept",
                  f"- LSH error areas at {threshold:.2f}: false positive {rates['false_positive']:.4f}, "
                  f"false negative {rates['false_negative']:.4f}; detection probability there "
                  f"{rates['probability_at_threshold']:.3f}"]
    if config.paragraphs.enabled:
        lines.append(f"- paragraphs: {figures.repeated_paragraphs} of {figures.distinct_paragraphs} "
                     f"distinct paragraphs repeated in >= {config.paragraphs.min_documents} distinct documents; "
                     f"{stats.notes['lines_removed']} lines ({stats.notes['chars_removed']:,} characters) removed")
    lines += ["", "| step | tasks | wall s | task s | worker peak RSS MB |", "|---|---|---|---|---|",
              *[f"| {s['step']} | {s['tasks']} | {s['wall_seconds']} | {s['task_seconds']} | "
                f"{s['worker_peak_rss_mb']} |" for s in steps],
              "", "## Example clusters", "", example_clusters_markdown(clusters["examples"])]
    return StageReport(markdown="\n".join(lines), tables=tables, files=files)
