"""A finished stage as downstream stages, the trainer and people see it: a `StageResult`, and the one place
that knows how to get from it to the stage's folder, its named files, its shards and its identity as a parent.

Stage flows pass these between each other (Prefect validates them as flow parameters), so they stay plain
JSON-able mappings; the helpers below are the only code that reads their `manifest` location.
"""
from __future__ import annotations

from typing_extensions import TypedDict   # pydantic (Prefect parameter validation) needs it before Python 3.12

from storage.manifest import Manifest


class StageResult(TypedDict):
    stage: str
    fingerprint: str
    manifest: str      # URL of the stage's manifest.json; the stage's folder is its parent
    digest: str        # the manifest's content digest: what downstream fingerprints depend on
    cached: bool       # found in the store rather than computed by this call
    stats: dict        # the manifest's stats (StageStats.to_dict() plus `figures`, `wall_seconds`)


def stage_result(manifest: Manifest, manifest_url: str, cached: bool) -> StageResult:
    return StageResult(stage=manifest.stage, fingerprint=manifest.fingerprint, manifest=manifest_url,
                       digest=manifest.digest(), cached=cached, stats=manifest.stats)


def stage_folder(result: StageResult) -> str:
    return result["manifest"].rsplit("/", 1)[0]


def stage_file(result: StageResult, name: str) -> str:
    """A named output file of the stage (the tokenizer's model, the eval suite's n-grams, ...)."""
    return f"{stage_folder(result)}/{name}"


def stage_shard_urls(result: StageResult) -> list[str]:
    """The stage's shard files, in its manifest's order."""
    return [stage_file(result, shard.path) for shard in Manifest.load(result["manifest"]).shards]


def stage_shard_bytes(result: StageResult) -> list[int]:
    """The stage's shard sizes, in its manifest's order."""
    return [shard.bytes for shard in Manifest.load(result["manifest"]).shards]


def parent_of(result: StageResult) -> dict:
    """How a downstream stage names an upstream one: its manifest digest (content) and location."""
    return {"stage": result["stage"], "digest": result["digest"], "location": result["manifest"]}
