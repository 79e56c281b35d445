"""The dedup stage's steps in their order, defined once: per-shard features, per-bucket relations, one
clustering call, per-bucket repeated paragraphs and substrings (when on), then per-shard output. The steps talk
through files in `<out_dir>/work/`.

`dedup_steps` runs them through a `MapStep`, which maps a step's call over its jobs: in this process by default
(tests, benchmarks, a notebook), or through a stage runner's steps (`tasks/dedup/stage.py`, which
also times each step and removes `work/` once the output is complete). Each call records its result when done
(`tasks.dedup.task`), so a rerun picks up where a killed one stopped."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from configs.dedup import DedupConfig
from tasks.dedup.apply import ApplyJob
from tasks.dedup.features import part_name
from tasks.dedup.task import apply_task, clusters_call, edges_task, features_task, paragraphs_task, substrings_task


class MapStep(Protocol):
    def __call__(self, step: str, function: Callable[..., dict], jobs: list, sizes: list[int] | None = None,
                 **arguments) -> list[dict]:
        """`[function(job, **arguments) for job in jobs]`; `sizes` (input bytes per job) may order the calls."""


def in_this_process(step: str, function: Callable[..., dict], jobs: list, sizes: list[int] | None = None,
                    **arguments) -> list[dict]:
    return [function(job, **arguments) for job in jobs]


@dataclass
class DedupSteps:
    """Each step's call results, in job order (the clustering's one result)."""
    features: list[dict]
    edges: list[dict]
    clusters: dict
    paragraphs: list[dict]
    substrings: list[dict]
    applied: list[dict]        # per input shard: its output shard's result (tasks.shard_result)

    def figures(self) -> dict[str, int]:
        """What the steps found, summed over their calls (storage.stage_figures.DedupFigures, less the work files)."""
        return {
            "documents_without_shingles": sum(result["without_shingles"] for result in self.features),
            "exact_edges": sum(result["exact_edges"] for result in self.edges),
            "candidate_pairs": sum(result["candidate_pairs"] for result in self.edges),
            "verified_pairs": sum(result["verified_pairs"] for result in self.edges),
            "clusters": self.clusters["clusters"],
            "documents_in_clusters": self.clusters["documents_in_clusters"],
            "propagation_rounds": self.clusters["propagation_rounds"],
            "distinct_paragraphs": sum(result["paragraphs"] for result in self.paragraphs),
            "repeated_paragraphs": sum(result["repeated_paragraphs"] for result in self.paragraphs),
            "repeated_windows": sum(result["repeated_windows"] for result in self.substrings),
        }


def dedup_steps(shard_urls: list[str], out_dir: str, config: DedupConfig, map_step: MapStep = in_this_process,
                shard_bytes: list[int] | None = None) -> DedupSteps:
    """Deduplicate document shards into `out_dir/shards/` (the removed documents listed in `out_dir/removed/`, the
    duplicate clusters' members in `out_dir/clusters/`, under the same names). The clustering is one call, made
    through `map_step` like the others (its passes fan out themselves, `tasks.fan_out`)."""
    parts = [part_name(index) for index in range(len(shard_urls))]
    work = f"{out_dir}/work"
    buckets = list(range(config.buckets))
    features = map_step("features", features_task, list(zip(shard_urls, parts)), shard_bytes, work=work,
                        config=config)
    edges = map_step("edges", edges_task, buckets, work=work, parts=parts, config=config)
    clusters = map_step("clusters", clusters_call, [work], parts=parts, shard_urls=shard_urls, config=config)[0]
    paragraphs = map_step("paragraphs", paragraphs_task, buckets, work=work, parts=parts, config=config) \
        if config.paragraphs.enabled else []
    substrings = map_step("substrings", substrings_task, buckets, work=work, parts=parts, config=config) \
        if config.substring.enabled else []
    jobs = [ApplyJob(url, part, *(f"{out_dir}/{folder}/{os.path.basename(url)}"
                                  for folder in ("shards", "removed", "clusters")))
            for url, part in zip(shard_urls, parts)]
    applied = map_step("apply", apply_task, jobs, shard_bytes, work=work, config=config)
    return DedupSteps(features, edges, clusters, paragraphs, substrings, applied)

