"""A script that starts a run must do it under `if __name__ == "__main__":` (Dask's spawned workers import it
again): without the guard it stops at once with one line that names the fix (flows/main_guard.py)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = """
from configs.schema import DaskConfig
from flows.dask_cluster import dask_cluster

def start():
    with dask_cluster(DaskConfig(n_workers=1)) as cluster:
        print("started", cluster.address)
"""


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(START) + textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_an_unguarded_script_stops_before_any_worker_starts_with_the_fix_named(tmp_path):
    done = _run(tmp_path, "\nstart()\n")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("flows.main_guard.UnguardedScript: ") and "script.py, line 9," in last
    assert 'if __name__ == "__main__":' in last and "started" not in done.stdout
    assert "bootstrapping phase" not in done.stderr and "Nanny" not in done.stderr


def test_a_guarded_script_and_a_guarded_call_through_a_function_pass_the_check(tmp_path):
    import ast

    from flows.main_guard import _is_main_guard

    for guard in ('if __name__ == "__main__":', "if '__main__' == __name__:",
                  'if __name__ == "__main__" and sys.argv[1:2] == ["child"]:'):      # benchmarks/harness.py's
        assert _is_main_guard(ast.parse(f"{guard}\n    pass\n").body[0])
    for not_a_guard in ("if __name__ != '__main__':", "if __name__ == '__main__' or True:"):
        assert not _is_main_guard(ast.parse(f"{not_a_guard}\n    pass\n").body[0])
    probe = "\nfrom flows.main_guard import unguarded_line\n\ndef probe():\n    print('line', unguarded_line())\n"
    guarded = _run(tmp_path, probe + "\nif __name__ == '__main__':\n    probe()\n")
    assert guarded.stdout.strip() == "line None", guarded.stderr
    unguarded = _run(tmp_path, probe + "\nprobe()\n")
    assert unguarded.stdout.strip() == "line 14", unguarded.stderr
