"""The dedup stage's calls, one per step and shard or bucket, run as plain Dask tasks by the stage's steps
(`Steps.map`, tasks/stage.py); clustering is one call in the process that runs the stage (`Steps.call`), whose passes fan out
to the cluster (`tasks.fan_out`). Each call records its result when done (`run_once`), so a rerun after a killed
worker or a killed run picks up where it stopped."""
from __future__ import annotations

import resource
import time
from typing import Callable

from configs.dedup import DedupConfig
from tasks.dedup.apply import ApplyJob, apply_decisions
from tasks.dedup.clusters import cluster_decisions
from tasks.dedup.components import scatter_edges
from tasks.dedup.exact import exact_edges, url_losers
from tasks.dedup.features import compute_features
from tasks.dedup.lsh import verified_edges
from tasks.dedup.paragraphs import repeated_paragraphs
from tasks.dedup.substrings import repeated_windows
from tasks.resumable import run_once, shard_record_url


def _record(work: str, step: str, name: object) -> str:
    return f"{work}/records/{step}/{name}.json"


def _measured(compute: Callable[[], dict]) -> Callable[[], dict]:
    """Adds the step's seconds (unless the step counts its own, as `apply` does in its stats) and the worker
    process's peak resident memory so far (Linux: KiB -> MiB)."""
    def run() -> dict:
        started = time.perf_counter()
        result = compute()
        return ({"seconds": round(time.perf_counter() - started, 4)} | result
                | {"worker_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
    return run


def features_task(job: tuple[str, str], work: str, config: DedupConfig) -> dict:
    shard_url, part = job
    return run_once(_record(work, "features", part),
                    _measured(lambda: compute_features(shard_url, int(part), work, config)))


def edges_task(bucket: int, work: str, parts: list[str], config: DedupConfig) -> dict:
    """Exact, URL and verified near-duplicate relations among the documents whose keys fall in `bucket`, scattered
    into the components' adjacency shuffle."""
    def compute() -> dict:
        found = {"bucket": bucket} | exact_edges(work, bucket, parts, config.exact.enabled) \
            | url_losers(work, bucket, parts, config.url.enabled) | verified_edges(work, bucket, parts, config.minhash)
        scatter_edges(work, config.buckets, bucket)
        return found
    return run_once(_record(work, "edges", bucket), _measured(compute))


def clusters_call(work: str, parts: list[str], shard_urls: list[str], config: DedupConfig) -> dict:
    return run_once(_record(work, "clusters", "all"), lambda: cluster_decisions(work, parts, shard_urls, config))


def paragraphs_task(bucket: int, work: str, parts: list[str], config: DedupConfig) -> dict:
    return run_once(_record(work, "paragraphs", bucket),
                    _measured(lambda: repeated_paragraphs(work, bucket, parts, config.buckets, config.paragraphs)))


def apply_task(job: ApplyJob, work: str, config: DedupConfig) -> dict:
    return run_once(shard_record_url(job.output_url), _measured(lambda: apply_decisions(job, work, config)))


def substrings_task(bucket: int, work: str, parts: list[str], config: DedupConfig) -> dict:
    return run_once(_record(work, "substrings", bucket),
                    _measured(lambda: repeated_windows(work, bucket, parts, config.buckets)))
