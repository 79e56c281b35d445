"""The layers point one way: `flows/` (orchestration) imports the rest; `tasks/`, `training/`, `storage/`,
`configs/` and `tracking/` never import `flows/` nor Prefect, and a training rank loads neither Prefect nor
MLflow."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOWER_LAYERS = ("tasks", "training", "storage", "configs", "tracking")


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_lower_layer_imports_flows():
    arrows = [str(path.relative_to(ROOT)) for layer in LOWER_LAYERS for path in sorted((ROOT / layer).rglob("*.py"))
              if "flows" in _imported_packages(path)]
    assert arrows == []


def test_only_flows_knows_the_orchestrator():
    arrows = [str(path.relative_to(ROOT)) for layer in LOWER_LAYERS for path in sorted((ROOT / layer).rglob("*.py"))
              if {"prefect", "prefect_dask"} & _imported_packages(path)]
    assert arrows == []


def test_a_training_rank_imports_neither_prefect_mlflow_nor_scipy():
    # scipy too: the scaling-law fit's optimizer is 0.5 s of every rank's start-up if imported with the module
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, training.train; "
         "print(' '.join(m for m in ('mlflow', 'prefect', 'flows', 'scipy') if m in sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []
