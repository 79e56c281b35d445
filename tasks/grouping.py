"""Consecutive shards grouped by their bytes: which shards one call reads (a stage runner's calls), and which
scored shards the quality filter merges into one output shard. The latter decides output bytes, so it lives
here, in a stage's fingerprinted code, not in the orchestration layer."""
from __future__ import annotations

from collections.abc import Sequence

TASK_BYTES = 32 << 20       # input per call when shards are small: amortises a call's fixed costs (models loaded)


def byte_groups(jobs: Sequence, sizes: Sequence[int], min_groups: int, task_bytes: int = TASK_BYTES) -> list[list]:
    """Consecutive jobs grouped by about `task_bytes` of input (a job alone when its shard is larger), but into
    about `min_groups` groups while there are jobs enough: calls grouped so give every worker thread work and
    finish close together (`map_groups`); output shards grouped so leave the next stage work to share.

    The input is cut into equal byte ranges and each job goes to the range its middle byte falls in, so the groups
    are as even as the jobs allow (cutting greedily at the target left a short last group: 7 runs of 8 asked)."""
    total = sum(sizes)
    if total == 0:
        return [list(jobs)] if jobs else []
    target = max(1, min(task_bytes, total // max(1, min_groups)))
    ranges = max(1, total // target)                 # equal ranges of `target` bytes or a little more
    groups: dict[int, list] = {}
    start = 0
    for job, size in zip(jobs, sizes):
        groups.setdefault((2 * start + size) * ranges // (2 * total), []).append(job)
        start += size
    return list(groups.values())
