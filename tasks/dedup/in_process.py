"""The dedup steps in one process, in the stage's order, without Prefect or Dask: for tests, benchmarks and
notebooks that deduplicate a handful of shards. The stage (`flows/dedup_stage.py`) runs the same steps as
mapped tasks."""
from __future__ import annotations

import os

from configs.dedup import DedupConfig
from tasks.dedup.apply import ApplyJob, apply_decisions
from tasks.dedup.clusters import cluster_decisions
from tasks.dedup.components import scatter_edges
from tasks.dedup.exact import exact_edges, url_losers
from tasks.dedup.features import compute_features, part_name
from tasks.dedup.lsh import verified_edges
from tasks.dedup.paragraphs import repeated_paragraphs
from tasks.dedup.substrings import repeated_windows


def dedup_shards(shard_urls: list[str], out_dir: str, config: DedupConfig) -> dict:
    """Deduplicate document shards into `out_dir/shards/` (removed documents listed in `out_dir/removed/`,
    intermediate files in `out_dir/work/`); returns the clustering result and each output shard's stats."""
    parts = [part_name(index) for index in range(len(shard_urls))]
    work = f"{out_dir}/work"
    for index, url in enumerate(shard_urls):
        compute_features(url, index, work, config)
    for bucket in range(config.buckets):
        exact_edges(work, bucket, parts, config.exact.enabled)
        url_losers(work, bucket, parts, config.url.enabled)
        verified_edges(work, bucket, parts, config.minhash)
        scatter_edges(work, config.buckets, bucket)
    clusters = cluster_decisions(work, parts, shard_urls, config)
    if config.paragraphs.enabled:
        for bucket in range(config.buckets):
            repeated_paragraphs(work, bucket, parts, config.buckets, config.paragraphs)
    if config.substring.enabled:
        for bucket in range(config.buckets):
            repeated_windows(work, bucket, parts, config.buckets)
    shards = [apply_decisions(ApplyJob(url, part, f"{out_dir}/shards/{os.path.basename(url)}",
                                       f"{out_dir}/removed/{os.path.basename(url)}"), work, config)
              for url, part in zip(shard_urls, parts)]
    return {"clusters": clusters, "shards": shards}
