"""What a finished stage leaves behind for people: a Prefect table + markdown artifact and MLflow records."""
from __future__ import annotations

import json
import os

from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact

from configs.schema import Recipe
from flows.tracking_run import activate_pending_run
from storage.manifest import Manifest
from storage.stage_figures import FIGURES_KEY
from storage.stage_result import StageResult, stage_result
from tasks.stage_report import StageReport
from tracking.store import artifact_url

TOP_REASONS = 4


def publish_stage_report(recipe: Recipe, manifest: Manifest, manifest_url: str, shard_results: list[dict],
                         cached: bool, report: StageReport | None = None) -> StageResult:
    stats = manifest.stats
    stage = manifest.stage
    report = report or StageReport()
    for name, rows in report.tables.items():
        create_table_artifact(key=f"{artifact_key(recipe.name)}-{artifact_key(stage)}-{artifact_key(name)}", table=rows,
                              description=f"{stage}: {name} ({recipe.name})")
    if shard_results:
        create_table_artifact(
            key=f"{artifact_key(recipe.name)}-{artifact_key(stage)}-shards",
            table=[_shard_row(shard) for shard in shard_results],
            description=f"{stage}: per-shard statistics ({recipe.name})",
        )
    create_markdown_artifact(
        key=f"{artifact_key(recipe.name)}-{artifact_key(stage)}-summary",
        markdown=_summary_markdown(stage, manifest, manifest_url, cached) + "\n\n" + report.markdown,
        description=f"{stage}: stage summary ({recipe.name})",
    )
    import mlflow      # here, not at import: the first stage starts before MLflow is loaded (flows.tracking_run)

    activate_pending_run()
    if mlflow.active_run() is not None:
        mlflow.log_metrics(stage_metrics(stage, stats))
        mlflow.set_tags({f"sluice.{stage}.fingerprint": manifest.fingerprint,
                         f"sluice.{stage}.manifest": manifest_url,
                         f"sluice.{stage}.cached": str(cached).lower()})
        mlflow.log_text(json.dumps(stats, indent=2), f"stages/{stage}/stats.json")
        mlflow.log_text(manifest.to_json(), f"stages/{stage}/manifest.json")
        if shard_results:
            mlflow.log_text(json.dumps(shard_results, indent=2), f"stages/{stage}/shards.json")
        if report.markdown:
            mlflow.log_text(report.markdown, f"stages/{stage}/report.md")
        for name, rows in report.tables.items():
            mlflow.log_text(json.dumps(rows, indent=2), f"stages/{stage}/{artifact_key(name)}.json")
        for path in report.files:
            mlflow.log_artifact(path, f"stages/{stage}")
            _image_artifact(recipe.name, stage, path)
    return stage_result(manifest, manifest_url, cached)


def _image_artifact(recipe_name: str, stage: str, path: str) -> None:
    """A chart on the stage's flow-run page, when a tracking server can serve it to the browser."""
    import mlflow

    name = os.path.basename(path)
    url = artifact_url(mlflow.get_tracking_uri(), mlflow.active_run().info.run_id, f"stages/{stage}/{name}")
    if url and name.endswith(".png"):
        create_image_artifact(image_url=url, key=f"{artifact_key(recipe_name)}-{artifact_key(stage)}-"
                                                 f"{artifact_key(name.removesuffix('.png'))}",
                              description=f"{stage}: {name} ({recipe_name})")


def artifact_key(name: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-") or "run"


def _shard_row(shard: dict) -> dict:
    top = sorted(shard["drops"].items(), key=lambda item: -item[1])[:TOP_REASONS]
    return {
        "input": ", ".join(url.rsplit("/", 1)[-1] for url in shard["inputs"]),
        **({"records": shard["records_read"]} if shard["records_read"] else {}),
        "candidates": shard["candidates"],
        "kept": shard["documents_out"],
        "top drops": ", ".join(f"{reason} {count}" for reason, count in top),
        "problems": ", ".join(f"{reason} {count}" for reason, count in shard["problems"].items()),
        "seconds": shard["seconds"],
        "resumed": shard.get("resumed", False),
    }


def _summary_markdown(stage: str, manifest: Manifest, manifest_url: str, cached: bool) -> str:
    stats = manifest.stats
    lines = [
        f"# {stage} {'(cached: skipped)' if cached else ''}",
        f"- manifest: `{manifest_url}`",
        f"- shards: {len(manifest.shards)}, documents out: {stats['documents_out']} "
        f"of {stats['candidates']} candidates"
        + (f" ({stats['records_read']} records read)" if stats["records_read"] else ""),
        f"- bytes in: {stats['bytes_in']:,}, text bytes out: {stats['bytes_out']:,}, "
        f"wall: {stats.get('wall_seconds', 0)} s",
        f"- worker seconds: {stats['seconds']}, throughput: {stats['docs_per_second']} docs/s per worker",
        *([f"- orchestration: {stats['orchestration_share']:.0%} of the wall time (wall - worker seconds / "
            f"{stats['task_slots']} Dask worker threads, over wall)"] if "orchestration_share" in stats else []),
        *([f"- beyond the longest call ({stats['longest_call_seconds']} s, which more workers do not shorten): "
           f"{stats['overhead_share']:.0%} of the wall time"] if "overhead_share" in stats else []),
        "",
        "| drop reason | documents |",
        "|---|---|",
        *[f"| {reason} | {count} |" for reason, count in stats["drops"].items()],
        "",
        "| problem (damaged input) | count |",
        "|---|---|",
        *[f"| {reason} | {count} |" for reason, count in stats["problems"].items()],
    ]
    return "\n".join(lines)


def stage_metrics(stage: str, stats: dict) -> dict[str, float]:
    """Numbers of a stage's stats as MLflow metrics: `<stage>.documents_out`, `<stage>.drop.non_html`, and its
    figures' numbers: `<stage>.figure.vocab_size`, ..."""
    metrics = {f"{stage}.{key}": float(value) for key, value in stats.items() if isinstance(value, (int, float))}
    metrics.update({f"{stage}.figure.{key}": float(value) for key, value in stats.get(FIGURES_KEY, {}).items()
                    if isinstance(value, (int, float)) and not isinstance(value, bool)})
    for group in ("drops", "problems"):
        metrics.update({f"{stage}.{group[:-1]}.{reason}": float(count)
                        for reason, count in stats.get(group, {}).items()})
    return metrics
