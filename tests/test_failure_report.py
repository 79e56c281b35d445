"""A run that fails in a stage says so in a few lines: the cause once, the stage, the log with the traceback, exit
status 2 for too little data; no traceback on the console, and no Dask worker logging the failed call again or the
calls cancelled after it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from flows.failure_report import report_failure
from tasks.errors import TooLittleData

ROOT = Path(__file__).resolve().parents[1]
WHIRLWIND = "warc/commoncrawl/whirlwind-python/whirlwind.warc.gz"


@pytest.mark.slow
def test_too_little_data_for_the_quality_models_is_reported_once_without_a_traceback(data_dir, dask_address, tmp_path):
    """`sluice run` in its own process, on the session's Prefect API and Dask cluster (starting its own costs ~15 s
    and is tested in test_cli_run)."""
    from flows.dask_cluster import prefect_api_env

    recipe = {"name": "too-little", "store": str(tmp_path / "store"),
              "input": {"paths": [str(data_dir / WHIRLWIND)], "source": "too-little"},
              "dask": {"address": dask_address}, "tokenizer": {"enabled": False},
              # a KenLM model of a few seconds: a cancelled call runs to its end on its worker (Dask cannot stop
              # a running call), and the default reference's ~20 s would hold a worker of the next test's run
              "quality": {"kenlm": {"reference": {"en": ["{data_dir}/reference/speeches_nltk"]}}},
              "mixture": {"enabled": False}, "mlflow": {"experiment": "too-little"}}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    env = os.environ | prefect_api_env() | {"SLUICE_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run([sys.executable, "-m", "cli", "run", str(tmp_path / "recipe.yaml")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    _wait_until_idle(dask_address)      # the cancelled KenLM call ends: the next test's run has both workers
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    cause = "distinct __label__cc examples, at least 50 are needed"
    assert output.count(cause) == 1 and "in stage quality_models" in output, output
    # the KenLM model, built beside the classifier, is cancelled: no worker says so, none is reported killed
    assert not any(text in output for text in ("Traceback", "Compute Failed", "CancelledError", "killing")), output
    assert len([line for line in output.splitlines() if line.strip()]) <= 15, output
    log = Path(output.split("full log: ", 1)[1].split(" (-v", 1)[0]).read_text()
    assert "Traceback" in log and cause in log                 # the whole story is in the log


def _wait_until_idle(dask_address: str, timeout_s: float = 120) -> None:
    from distributed import Client

    with Client(dask_address) as client:
        deadline = time.monotonic() + timeout_s
        while sum(client.run(_executing).values()) and time.monotonic() < deadline:
            time.sleep(0.2)


def _executing(dask_worker) -> int:
    return len(dask_worker.state.executing)


def test_an_internal_error_exits_1_and_names_its_type(tmp_path, capsys):
    error = KeyError("shard")
    error.add_note("(in stage dedup)")
    assert report_failure(error, "sluice run", None) == 1
    printed = capsys.readouterr().err
    assert "sluice run failed: KeyError: 'shard'\n  in stage dedup\n  the traceback is above" in printed
    assert report_failure(TooLittleData("3 documents, 50 needed"), "sluice run", None) == 2
