"""A stage's orchestration share and the overhead beyond its longest call (tasks/stats.py)."""
from __future__ import annotations

import pytest

from tasks.stats import orchestration_share, overhead_share


def test_a_stage_of_one_call_is_all_orchestration_by_the_formula_but_not_beyond_its_longest_call():
    # one 1.6 s call on 2 threads in a 1.7 s stage: half the slots idle, 0.1 s of the flow's own time
    assert orchestration_share(1.7, 1.6, 2) == pytest.approx(0.5294, abs=1e-4)
    assert overhead_share(1.7, 1.6, 2, longest_call_seconds=1.6) == pytest.approx(0.0588, abs=1e-4)
    # work spread evenly: the longest call changes nothing
    assert overhead_share(10.0, 18.0, 2, longest_call_seconds=1.0) == orchestration_share(10.0, 18.0, 2) == 0.1
    assert overhead_share(0.0, 1.0, 2, 1.0) == orchestration_share(1.0, 5.0, 0) == 0.0
