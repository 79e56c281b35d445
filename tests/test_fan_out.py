"""A stage's background call: on the cluster it starts at once and runs on a worker; without one it runs when its
result is asked for; either way its seconds count with the stage's calls, and an error names the job. The calls'
seconds add up, and the longest is kept."""
from __future__ import annotations

import time
from functools import partial

import pytest

from tasks.fan_out import calls_on, fan_out, in_background


def _worker_name(pause: float) -> str:
    from distributed import get_worker

    time.sleep(pause)
    return get_worker().name


def _fails() -> None:
    raise ValueError("no chart today")


def test_a_background_call_runs_on_a_worker_while_the_flow_goes_on_and_its_seconds_count():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster, Client(cluster) as client:
        with calls_on(client) as calls:
            started = time.perf_counter()
            result = in_background(partial(_worker_name, 0.3))
            assert time.perf_counter() - started < 0.25                  # submitted, not waited for
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
        assert fan_out(time.sleep, [0.05, 0.2, 0.1]) == [None, None, None]
    assert calls.seconds >= 0.35
    assert 0.2 <= calls.longest < 0.3


def test_a_stage_of_one_call_is_all_orchestration_by_the_formula_but_not_beyond_its_longest_call():
    from tasks.stats import orchestration_share, overhead_share

    # one 1.6 s call on 2 threads in a 1.7 s stage: half the slots idle, 0.1 s of the flow's own time
    assert orchestration_share(1.7, 1.6, 2) == pytest.approx(0.5294, abs=1e-4)
    assert overhead_share(1.7, 1.6, 2, longest_call_seconds=1.6) == pytest.approx(0.0588, abs=1e-4)
    # work spread evenly: the longest call changes nothing
    assert overhead_share(10.0, 18.0, 2, longest_call_seconds=1.0) == orchestration_share(10.0, 18.0, 2) == 0.1
    assert overhead_share(0.0, 1.0, 2, 1.0) == orchestration_share(1.0, 5.0, 0) == 0.0
