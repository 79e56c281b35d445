"""`sluice run` from a shell with no Prefect API configured: it starts Prefect's temporary server itself, before
importing the flows, records the run there (the database under PREFECT_HOME) and leaves no server behind."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _temporary_servers(prefect_home: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if "prefect.server.api.server:create_app" in " ".join(process.info["cmdline"] or []) \
                    and process.environ().get("PREFECT_HOME") == str(prefect_home):
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_sluice_run_starts_and_stops_its_own_temporary_prefect_server(data_dir, tmp_path, prefect_database):
    page = data_dir / "warc" / "commoncrawl" / "whirlwind-python" / "whirlwind.warc.gz"
    recipe = {"name": "cli-cold", "store": str(tmp_path / "store"),
              "input": {"paths": [str(page)], "source": "cli-test"}, "dask": {"n_workers": 1},
              "dedup": {"enabled": False}, "quality": {"enabled": False}, "tokenizer": {"enabled": False},
              "mlflow": {"experiment": "cli-cold"}}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    prefect_home = tmp_path / "prefect"
    prefect_database.copy_to(prefect_home)          # migrated already: the test is about the server, not migrations
    env = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"} | {
        "PREFECT_HOME": str(prefect_home)}
    done = subprocess.run([sys.executable, "-m", "cli", "run", str(tmp_path / "recipe.yaml")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "recipe cli-cold:" in done.stdout and "extract: 1 documents" in done.stdout, done.stdout
    assert "Dask scheduler tcp://127.0.0.1:" in done.stdout       # its own LocalCluster, started for the extraction
    with sqlite3.connect(prefect_home / "prefect.db") as database:
        (task_runs,) = database.execute("SELECT count(*) FROM task_run WHERE state_type = 'COMPLETED'").fetchone()
    assert task_runs >= 1
    assert not _temporary_servers(prefect_home), "the temporary server outlived the run"
    log = Path(done.stderr.split("full log: ", 1)[1].split(" (-v", 1)[0]).read_text()
    assert "Beginning flow run" in log and "Starting temporary server" not in log    # not Prefect's own, later
