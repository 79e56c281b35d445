"""What a finished stage leaves behind for people: a Prefect table + markdown artifact and MLflow records."""
from __future__ import annotations

import json

import mlflow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from configs.schema import Recipe
from flows.tracking import stage_metrics
from storage.manifest import Manifest

TOP_REASONS = 4


def publish_stage_report(recipe: Recipe, manifest: Manifest, manifest_url: str, shard_results: list[dict],
                         cached: bool) -> dict:
    stats = manifest.stats
    stage = manifest.stage
    if shard_results:
        create_table_artifact(
            key=f"{_artifact_key(recipe.name)}-{stage}-shards",
            table=[_shard_row(shard) for shard in shard_results],
            description=f"{stage}: per-shard statistics ({recipe.name})",
        )
    create_markdown_artifact(
        key=f"{_artifact_key(recipe.name)}-{stage}-summary",
        markdown=_summary_markdown(stage, manifest, manifest_url, cached),
        description=f"{stage}: stage summary ({recipe.name})",
    )
    if mlflow.active_run() is not None:
        mlflow.log_metrics(stage_metrics(stage, stats))
        mlflow.set_tags({f"sluice.{stage}.fingerprint": manifest.fingerprint,
                         f"sluice.{stage}.manifest": manifest_url,
                         f"sluice.{stage}.cached": str(cached).lower()})
        mlflow.log_text(json.dumps(stats, indent=2), f"stages/{stage}/stats.json")
        mlflow.log_text(manifest.to_json(), f"stages/{stage}/manifest.json")
        if shard_results:
            mlflow.log_text(json.dumps(shard_results, indent=2), f"stages/{stage}/shards.json")
    return {"stage": stage, "fingerprint": manifest.fingerprint, "manifest": manifest_url,
            "digest": manifest.digest(), "cached": cached, "stats": stats}


def _artifact_key(name: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-") or "run"


def _shard_row(shard: dict) -> dict:
    top = sorted(shard["drops"].items(), key=lambda item: -item[1])[:TOP_REASONS]
    return {
        "input": shard["input"].rsplit("/", 1)[-1],
        "records": shard["records_read"],
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
        f"of {stats['candidates']} candidates ({stats['records_read']} records read)",
        f"- bytes in: {stats['bytes_in']:,}, text bytes out: {stats['bytes_out']:,}",
        f"- worker seconds: {stats['seconds']}, throughput: {stats['docs_per_second']} docs/s per worker",
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
