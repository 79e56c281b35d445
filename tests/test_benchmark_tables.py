"""benchmarks/README.md's marked tables are what benchmarks/tables.py renders from the committed result files: a
figure typed over, or a result file recorded again without its table, fails here. The check runs as a script (tests
do not import `benchmarks`)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "benchmarks" / "README.md"


def check(readme: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "tables.py"), "--check", "--readme", str(readme)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_readme_tables_are_what_the_result_files_give():
    done = check(README)
    assert done.returncode == 0, done.stderr


def test_a_figure_typed_over_fails_the_check_and_names_its_table(tmp_path):
    lines = README.read_text(encoding="utf-8").splitlines(keepends=True)
    first_row = lines.index("<!-- table: throughput -->\n") + 3    # under the marker, the header and the rule
    lines[first_row] = re.sub(r"\d", lambda digit: str((int(digit[0]) + 1) % 10), lines[first_row], count=1)
    edited = tmp_path / "README.md"
    edited.write_text("".join(lines), encoding="utf-8")
    done = check(edited)
    assert done.returncode == 1 and "tables not as the result files give them: throughput (" in done.stderr, done.stderr


def test_the_readme_stays_within_300_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300
