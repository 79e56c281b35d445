"""A stage's background call: on the cluster it starts at once and runs on a worker; without one it runs when its
result is asked for; either way its seconds count with the stage's calls, and an error names the job. The calls'
seconds add up, and the longest is kept."""
from __future__ import annotations

import threading
import time
from functools import partial

import pytest

from flows.dask_calls import DaskCalls
from tasks.fan_out import calls_on, completed, fan_out, in_background, per_thread


_RELEASED = threading.Event()       # the in-process worker's call waits for the test to set it


def _worker_name_once_released(pause: float) -> str:
    from distributed import get_worker

    if not _RELEASED.wait(60):
        raise TimeoutError("never released: in_background waited for its own call")
    time.sleep(pause)
    return get_worker().name


def _fails() -> None:
    raise ValueError("no chart today")


def test_a_background_call_runs_on_a_worker_while_the_flow_goes_on_and_its_seconds_count():
    from distributed import Client, LocalCluster

    _RELEASED.clear()
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster, Client(cluster) as client:
        with calls_on(DaskCalls(client)) as calls:
            result = in_background(partial(_worker_name_once_released, 0.3))    # returns before the call can end
            _RELEASED.set()
            assert result() == next(iter(client.scheduler_info()["workers"].values()))["name"]
        assert calls.seconds >= 0.3


def test_without_a_cluster_the_job_runs_when_asked_and_an_error_names_it():
    ran = []
    with calls_on(None) as calls:
        result = in_background(lambda: ran.append(1) or "done")
        assert ran == []
        assert result() == "done" and ran == [1] and calls.seconds >= 0
        failing = in_background(_fails)
        with pytest.raises(ValueError, match="no chart today") as raised:
            failing()
    assert any("_fails" in note for note in raised.value.__notes__)


def test_the_calls_seconds_add_up_and_the_longest_is_kept():
    with calls_on(None) as calls:
        assert fan_out(time.sleep, [0.05, 0.5, 0.1]) == [None, None, None]
    assert calls.seconds >= 0.65
    assert 0.5 <= calls.longest < calls.seconds



def _started(pause: float) -> float:
    started = time.time()
    time.sleep(pause)
    return started


@pytest.mark.parametrize("per_call", [1, 2])
def test_with_sizes_the_largest_calls_start_first_and_results_keep_their_place(per_call):
    from distributed import Client, LocalCluster

    pauses, sizes = [0.01, 0.03, 0.02, 0.05, 0.04, 0.06], [1, 3, 2, 5, 4, 6]
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client, calls_on(DaskCalls(client)):
        results = dict(completed(_started, pauses, per_call, sizes=sizes))
    starts = [results[index] for index in range(len(pauses))]
    by_start = sorted(range(len(pauses)), key=starts.__getitem__)
    if per_call == 1:
        assert by_start == [5, 3, 4, 1, 2, 0]          # one worker: in the order of the sizes, largest first
    else:                                              # calls of 2 items: (4, 5) = 10, (2, 3) = 7, (0, 1) = 4
        assert by_start == [4, 5, 2, 3, 0, 1]
    with calls_on(None):
        starts = fan_out(_started, pauses)
    assert starts == sorted(starts)                    # no sizes: in item order


def test_per_thread_gives_each_worker_thread_one_call_and_all_to_one_without_a_cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client, calls_on(DaskCalls(client)):
        assert [per_thread(items) for items in (0, 1, 7, 8, 9)] == [1, 1, 4, 4, 5]
        assert fan_out(str, range(8), per_thread(8)) == [str(item) for item in range(8)]
    with calls_on(None):
        assert per_thread(8) == 8
