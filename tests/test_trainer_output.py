"""What the training flow reads from rank 0's output: its JSON records, and nothing else."""
from __future__ import annotations

from flows.torchrun import follow_records


def test_lines_that_only_look_like_records_are_logged_and_skipped():
    lines = ['{"step": 1, "loss": 2.0}\n', "{'printed': 'by a library'}\n", '{"event": "eval", "step": 2, '
             '"loss": 1.5}\n', '{"step": 3, "lo']                       # the last one cut short by a kill
    logged: list[str] = []
    assert follow_records(lines, logged.append) == {"step": 2, "loss": 1.5}
    assert logged == [line.rstrip() for line in lines]
