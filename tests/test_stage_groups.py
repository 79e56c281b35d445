"""Small shards share a task: consecutive shards grouped by input bytes, never fewer groups than the workers need."""
from __future__ import annotations

from tasks.grouping import byte_groups


def test_small_shards_are_grouped_and_large_ones_stay_alone():
    jobs = list(range(256))
    tiny = byte_groups(jobs, [1_000] * 256, min_groups=8)             # 256 near-empty shards: 8 tasks, in order
    assert len(tiny) == 8 and [job for group in tiny for job in group] == jobs
    large = byte_groups(jobs[:10], [100 << 20] * 10, min_groups=8)    # shards over the task size: one each
    assert large == [[job] for job in range(10)]
    mixed = byte_groups(list("abcd"), [40 << 20, 1, 1, 40 << 20], min_groups=4, task_bytes=32 << 20)
    assert [job for group in mixed for job in group] == list("abcd") and len(mixed) >= 2
    assert byte_groups(["only"], [5], min_groups=8) == [["only"]]
    assert byte_groups([], [], min_groups=8) == []
    assert len(byte_groups(jobs, [1_000] * 256, min_groups=8, task_bytes=0)) == 256     # 0: no grouping


def test_groups_are_even_and_the_last_is_not_left_short():
    # the 1x bench corpus's 16 scored shards: cutting greedily at an eighth of the bytes made 7 runs, the last half
    # as large as the others, so the next stage's 7 shards kept one of two workers idle for its last round
    sizes = [588858, 501699, 568989, 547350, 547533, 488836, 606216, 578193, 530222, 538058, 548269, 559016,
             604701, 679373, 559491, 477101]
    groups = byte_groups(list(range(16)), sizes, min_groups=8, task_bytes=64 << 20)
    assert groups == [[2 * index, 2 * index + 1] for index in range(8)]
    assert byte_groups([1, 2], [0, 0], min_groups=8) == [[1, 2]]        # empty shards: one group
