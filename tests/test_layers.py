"""The layers point one way (DESIGN.md, "Layers"): the allowed arrows between the project's packages are data
here, and so are the layers a framework may be imported in; any other import fails, with the file and the import.
A training rank loads neither Prefect nor MLflow (nor transformers, which only the export uses)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = "_work"          # benchmarks/_work: what benchmarks make (gitignored)
PROJECT = ("cli", "services", "flows", "tasks", "training", "tracking", "storage", "configs", "dev", "benchmarks",
           "tests")
# package -> the other project packages its modules may import
ALLOWED = {
    "cli": {"services", "flows", "tasks", "training", "tracking", "storage", "configs", "dev"},   # dev: `sluice corpus`
    "services": {"flows", "tracking", "storage", "configs"},     # flows: how the workers it starts are configured
    "flows": {"tasks", "training", "tracking", "storage", "configs"},
    "tasks": {"tracking", "storage", "configs"},
    "training": {"tracking", "storage", "configs"},
    "tracking": {"storage", "configs"},
    "storage": {"configs"},
    "configs": set(),
    "dev": {"tasks", "training", "storage", "configs"},            # training: the doctor's drills
    "benchmarks": {"cli", "services", "flows", "tasks", "training", "tracking", "storage", "configs", "dev"},
    # not benchmarks
    "tests": {"cli", "services", "flows", "tasks", "training", "tracking", "storage", "configs", "dev"},
}
# a framework -> the packages that may import it (tests and benchmarks use them all)
CONFINED = {"prefect": {"flows"}, "prefect_dask": {"flows"}, "dask": {"flows"}, "distributed": {"flows"},
            "mlflow": {"cli", "flows", "tracking"},     # cli: a model loaded by URI, MLflow's errors reported
            # the Hugging Face export: the model's mapping (training) and the tokenizer's conversion (tasks)
            "transformers": {"training", "tasks"},
            # `sluice eval`: lm-evaluation-harness runs from the flows; a local task's data is built in tasks
            "lm_eval": {"flows"}, "datasets": {"tasks"}}


def _imports(path: Path) -> list[str]:
    """The top-level names of every module the file imports, wherever in the file (functions included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (the project imports by absolute names)"
            names.append(node.module.split(".")[0])
    return names


def _arrows() -> list[tuple[str, str, str]]:
    """(package, file, imported) for every import of a project package or a confined framework."""
    return [(package, str(path.relative_to(ROOT)), name) for package in PROJECT
            for path in sorted((ROOT / package).rglob("*.py")) if not _made_by_a_run(path)
            for name in _imports(path) if name in PROJECT or name in CONFINED]


def _made_by_a_run(path: Path) -> bool:
    """Files a benchmark or a tool made (the peer's venv under benchmarks/_work, caches): not the project's code."""
    return any(part == WORK or part.startswith(".") for part in path.relative_to(ROOT).parts)


def test_every_project_import_follows_an_allowed_arrow():
    wrong = [f"{file} imports {name}" for package, file, name in _arrows()
             if name in PROJECT and name != package and name not in ALLOWED[package]]
    assert wrong == []


def test_each_framework_is_imported_only_in_its_layers():
    wrong = [f"{file} imports {name}" for package, file, name in _arrows()
             if name in CONFINED and package not in ("tests", "benchmarks") and package not in CONFINED[name]]
    assert wrong == []


def test_the_arrows_are_checked_on_every_package():
    """A new top-level package must be given its arrows here."""
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} | {"benchmarks", "tests"}
    assert packages <= set(PROJECT)


def test_a_training_rank_imports_neither_prefect_mlflow_nor_scipy():
    # scipy too: the scaling-law fit's optimizer is 0.5 s of every rank's start-up if imported with the module;
    # transformers (the export's) would cost seconds more
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, training.train; "
         "print(' '.join(m for m in ('mlflow', 'prefect', 'flows', 'scipy', 'transformers') if m in sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []
