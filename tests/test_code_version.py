"""Stage code versions are derived from what a stage imports: editing a module a stage reaches changes that
stage's version and no other, and so does a different version of a library it imports."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storage import code_version as cv

PROJECT = Path(__file__).resolve().parents[1]
STAGE_MODULES = {"extract": "tasks.extract.stage", "dedup": "tasks.dedup.stage", "quality": "tasks.quality.stage",
                 "tokenizer": "tasks.tokenize.stage", "mixture": "tasks.mixture.stage"}


@pytest.fixture()
def project_copy(tmp_path) -> Path:
    for package in ("configs", "flows", "storage", "tasks", "tracking", "training"):
        shutil.copytree(PROJECT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _versions(root: Path) -> dict[str, str]:
    return {stage: cv.code_version(module, root=root) for stage, module in STAGE_MODULES.items()}


@pytest.mark.parametrize("edited", ["tasks/dedup/minhash.py", "configs/dedup.py", "configs/tokenizer.py",
                                    "tasks/extract/html_text.py", "storage/token_shard.py", "tracking/charts.py",
                                    "tasks/quality/words.py", "tasks/grouping.py"])
def test_editing_a_module_changes_exactly_the_stages_that_reach_it(project_copy, edited):
    module = edited.removesuffix(".py").replace("/", ".")
    reaching = {stage for stage, root in STAGE_MODULES.items()
                if module in cv.code_closure(root, root=project_copy).modules}
    before = _versions(project_copy)
    with open(project_copy / edited, "a") as handle:
        handle.write("\n# an edit\n")
    after = _versions(project_copy)
    assert {stage for stage in STAGE_MODULES if before[stage] != after[stage]} == reaching
    assert reaching, f"{edited} is reached by no stage"


def test_a_trainer_edit_gives_a_run_a_new_folder_and_an_unrelated_edit_does_not(project_copy, tmp_path,
                                                                              monkeypatch):
    """A trained run is found again by its folder (`flows.training_inputs.run_folder`): after an edit to a module
    the trainer imports, the same run lands in a new folder, so an ablation trains it again; an edit to a data
    stage's module leaves the folder as it was. The older folder stays findable for --reuse-older-runs."""
    from configs.training import TrainingConfig
    from flows import training_inputs

    monkeypatch.setattr(training_inputs, "trainer_code_version",
                        lambda: cv.code_version(training_inputs.TRAINER_ENTRY, root=project_copy))
    spec, tokenizer, mixture = TrainingConfig(), {"digest": "t" * 16}, {"digest": "m" * 16}
    store = str(tmp_path / "store")

    def folder() -> str:
        path = training_inputs.run_folder(store, spec, tokenizer, mixture)
        (tmp_path / "store" / "train").mkdir(parents=True, exist_ok=True)
        Path(path).mkdir(exist_ok=True)
        return path

    first = folder()
    assert folder() == first
    for unrelated in ("tasks/dedup/minhash.py", "flows/ablation.py"):
        with open(project_copy / unrelated, "a") as handle:
            handle.write("\n# an edit\n")
        assert folder() == first, unrelated
    with open(project_copy / "training/model.py", "a") as handle:
        handle.write("\n# an edit\n")
    edited = folder()
    assert edited != first and edited.rpartition("-")[0] == first.rpartition("-")[0]
    assert training_inputs.older_code_checkpoints(edited) == [first]


def test_the_closures_include_the_imports_that_hand_lists_missed():
    # tasks/quality/words.py imports configs.dedup and tasks/tokenize/encode.py imports configs.tokenizer.
    assert "configs.dedup" in cv.code_closure("tasks.quality.stage").modules
    assert "configs.tokenizer" in cv.code_closure("tasks.tokenize.stage").modules
    # the dedup code is not part of extraction, and the modules that run and report stages are not followed
    extract = cv.code_closure("tasks.extract.stage").modules
    assert "tasks.dedup.minhash" not in extract
    assert "tasks.stage" in extract and not [module for module in extract if cv.orchestrates(module)]


def test_a_report_or_runner_edit_reruns_no_stage_and_a_helper_edit_reruns_its_stage(project_copy):
    """Reports and the stage runners are orchestration (storage.code_version.ORCHESTRATION); any other module a
    stage imports is followed like the rest."""
    before = _versions(project_copy)
    for report in ("tasks/quality/report.py", "tasks/stage_report.py", "tasks/stage_run.py", "flows/stage_runner.py",
                   "flows/reporting.py"):
        with open(project_copy / report, "a") as handle:
            handle.write("\n# an edit\n")
    assert _versions(project_copy) == before
    (project_copy / "tasks" / "extract" / "shard_naming.py").write_text("SUFFIX = '.parquet'\n")
    with open(project_copy / "tasks" / "extract" / "stage.py", "a") as handle:
        handle.write("\nfrom tasks.extract.shard_naming import SUFFIX\n")
    extract = cv.code_version("tasks.extract.stage", root=project_copy)
    with open(project_copy / "tasks" / "extract" / "shard_naming.py", "a") as handle:
        handle.write("# an edit\n")
    assert cv.code_version("tasks.extract.stage", root=project_copy) != extract


def test_library_versions_are_part_of_the_code_version(tmp_path, monkeypatch):
    """A small project whose stage imports an installed library (a real dist-info on sys.path): a new version of
    the library changes the stage's version; a stage that does not import it keeps its version."""
    project = tmp_path / "project"
    (project / "tasks" / "sub").mkdir(parents=True)
    (project / "tasks" / "__init__.py").write_text("")
    (project / "tasks" / "sub" / "__init__.py").write_text("")
    (project / "tasks" / "sub" / "work.py").write_text("from . import helper\nimport sluicetestlib\n")
    (project / "tasks" / "sub" / "helper.py").write_text("from ..plain import VALUE\n")
    (project / "tasks" / "plain.py").write_text("import json\nVALUE = 1\n")
    site = tmp_path / "site"
    (site / "sluicetestlib").mkdir(parents=True)
    (site / "sluicetestlib" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))

    def install(version: str) -> dict[str, str]:
        for old in site.glob("*.dist-info"):
            shutil.rmtree(old)
        info = site / f"sluicetestlib-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sluicetestlib\nVersion: {version}\n")
        (info / "top_level.txt").write_text("sluicetestlib\n")
        cv._distribution_versions_by_module.cache_clear()
        return {root: cv.code_version(root, root=project) for root in ("tasks.sub.work", "tasks.plain")}

    closure = cv.code_closure("tasks.sub.work", root=project)
    assert set(closure.modules) == {"tasks", "tasks.sub", "tasks.sub.work", "tasks.sub.helper", "tasks.plain"}
    first, second = install("1.0"), install("2.0")
    cv._distribution_versions_by_module.cache_clear()
    assert ("sluicetestlib", "2.0") in cv.code_closure("tasks.sub.work", root=project).libraries
    assert first["tasks.sub.work"] != second["tasks.sub.work"]
    assert first["tasks.plain"] == second["tasks.plain"]


def test_the_installed_distributions_key_ignores_folders_without_distributions(tmp_path, monkeypatch):
    # a Dask scheduler started in this process puts a new scratch folder on sys.path every run
    before = cv._installed_key()
    monkeypatch.syspath_prepend(str(tmp_path / "scratch-1"))
    (tmp_path / "scratch-1").mkdir()
    assert cv._installed_key() == before
    (tmp_path / "scratch-1" / "somelib-1.0.dist-info").mkdir()
    assert cv._installed_key() != before


def test_an_unknown_root_is_an_error(project_copy):
    with pytest.raises(ModuleNotFoundError, match="tasks.nothing"):
        cv.code_version("tasks.nothing", root=project_copy)
