"""A stage's code version, derived from what its code imports rather than listed by hand.

Starting from a stage's root modules, the project modules they import are followed transitively by reading
their source (nothing is imported). The version hashes the source of every module reached, the package
`__init__` files that importing them runs, the installed version of every third-party distribution those modules
import, and the Python minor version. Editing a module a stage reaches, or upgrading a library it imports,
gives the stage a new fingerprint, so the store never serves output that the current code would not produce.

A stage is defined beside its work (`tasks/<stage>/stage.py`), and that module is its root. The modules in
`ORCHESTRATION` (and what only they import) are not followed: they run stages (`flows/`, which a stage may not
import, and `tasks.stage_run`) or show people what a stage did (its report and charts), the same way for every
stage, so editing a chart does not rerun every stage. Nothing in them may compute the bytes a stage writes.
`tests/test_flow_e2e.py` checks this from a real run: each module whose code a stage's own code calls is in that
stage's closure, and the stage run in one process writes the same bytes as on Prefect + Dask.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from storage.fs import atomic_output
from storage.locations import state_dir

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ORCHESTRATION = (                  # modules (or packages) that run and report stages; see the module docstring
    "flows", "tasks.stage_run", "tasks.stage_report", "tasks.dedup.report", "tasks.quality.report",
)
DIGEST_LENGTH = 16


@dataclass(frozen=True)
class CodeClosure:
    """The project modules a stage reaches and the third-party distributions they import, with versions."""
    modules: tuple[str, ...]
    libraries: tuple[tuple[str, str], ...]     # (distribution, version), sorted

    def digest(self, root: Path = PROJECT_ROOT) -> str:
        digest = hashlib.sha256(f"python {sys.version_info.major}.{sys.version_info.minor}\n".encode())
        for module in self.modules:
            path = module_path(module, root)
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
        for name, version in self.libraries:
            digest.update(f"{name}=={version}\n".encode())
        return digest.hexdigest()[:DIGEST_LENGTH]


def code_version(*roots: str, root: Path = PROJECT_ROOT) -> str:
    """The code version of a stage whose work is done by the modules `roots` (dotted names)."""
    return code_closure(*roots, root=root).digest(root)


def code_closure(*roots: str, root: Path = PROJECT_ROOT) -> CodeClosure:
    modules, third_party = _traced(roots, root)
    return CodeClosure(modules=modules, libraries=tuple(sorted(_distribution_versions(third_party))))


# (roots, root) -> (the sources' state when traced, the modules reached, the third-party top-level modules)
_TRACED: dict[tuple[tuple[str, ...], Path], tuple[tuple, tuple[str, ...], frozenset[str]]] = {}


def _traced(roots: tuple[str, ...], root: Path) -> tuple[tuple[str, ...], frozenset[str]]:
    """The project modules `roots` reach and the third-party modules those import. Kept per process while no
    module reached and no folder holding one changed (a stage's closure is asked for at every stage run: a mixture
    search's hundred-odd took ~3 s of stat calls and parsing)."""
    known = _TRACED.get((roots, root))
    if known is not None and known[0] == _sources_state(known[1], root):
        return known[1], known[2]
    modules, third_party = _trace(roots, root)
    _TRACED[(roots, root)] = (_sources_state(modules, root), modules, third_party)
    return modules, third_party


def _sources_state(modules: tuple[str, ...], root: Path) -> tuple:
    """When and how big each module's file, each folder holding one and the project folder last changed: an
    edited, added or removed file (or package) changes it."""
    files = [module_path(module, root) for module in modules]
    if None in files:
        return ()                          # a module is gone: never equal to a traced state
    paths = sorted({root, *files, *(path.parent for path in files)}, key=str)
    return tuple((str(path), stat.st_mtime_ns, stat.st_size) for path, stat in ((path, path.stat()) for path in paths))


def _trace(roots: tuple[str, ...], root: Path) -> tuple[tuple[str, ...], frozenset[str]]:
    project = _project_packages(root)
    seen: set[str] = set()
    third_party: set[str] = set()
    pending = list(roots)
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        path = module_path(module, root)
        if path is None:
            raise ModuleNotFoundError(f"code version: no module {module!r} under {root}")
        seen.add(module)
        for imported in _imports(module, path):
            top = imported.split(".")[0]
            if top in project:
                found = _existing_module(imported, root)
                pending.extend(name for name in ([found, *_with_parents(found)] if found else [])
                               if not orchestrates(name))
            elif top not in sys.stdlib_module_names and top != "__future__":
                third_party.add(top)
        pending.extend(parent for parent in _with_parents(module) if not orchestrates(parent))
    return tuple(sorted(seen)), frozenset(third_party)


def orchestrates(module: str) -> bool:
    """Whether `module` is (in) one of the `ORCHESTRATION` modules, which no stage's closure follows."""
    return any(module == name or module.startswith(name + ".") for name in ORCHESTRATION)


def module_path(module: str, root: Path = PROJECT_ROOT) -> Path | None:
    """The source file of a dotted project module (a package's `__init__.py`), or None."""
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _project_packages(root: Path) -> set[str]:
    return {path.parent.name for path in root.glob("*/__init__.py")}


def _imports(module: str, path: Path) -> tuple[str, ...]:
    """Every module name `path` imports, absolute. `from a import b` yields `a.b` too, since b may be a module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return _imports_of_source(package, path.read_bytes(), str(path))


@lru_cache(maxsize=4096)
def _imports_of_source(package: str, source: bytes, filename: str) -> tuple[str, ...]:
    # keyed by the source itself, so an edited file is parsed again; every stage's closure shares the project's
    # common modules, parsed once per process (8 stages' closures: 0.52 s parsing each anew)
    names: list[str] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(package, node.module, node.level)
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return tuple(names)


def _resolve_relative(package: str, name: str | None, level: int) -> str:
    if level == 0:
        return name or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _existing_module(name: str, root: Path) -> str:
    """`a.b.c` if it is a module, else the longest prefix that is (`from a.b import function` names `a.b.function`)."""
    parts = name.split(".")
    while parts and module_path(".".join(parts), root) is None:
        parts.pop()
    return ".".join(parts)


def _with_parents(module: str) -> list[str]:
    """Importing `a.b.c` runs `a/__init__.py` and `a/b/__init__.py` first."""
    parts = module.split(".")
    return [".".join(parts[:index]) for index in range(1, len(parts))]


@lru_cache(maxsize=1)
def _distribution_versions_by_module() -> dict[str, list[list[str]]]:
    """Top-level module -> [distribution, version] of the distributions that provide it. Reading every installed
    distribution's metadata (`metadata.packages_distributions()`, then each version) takes ~0.7 s, on the way to
    every run's first task, so the answer is kept in a file under the state dir, named after the installed
    distributions' metadata folders: their names carry the versions, so installing, removing or upgrading any
    distribution reads them again."""
    cache = state_dir() / "cache" / f"distribution-versions-{_installed_key()}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    found = {module: [[name, metadata.version(name)] for name in sorted(set(names))]
             for module, names in metadata.packages_distributions().items()}
    try:
        with atomic_output(str(cache)) as partial:   # a reader never sees half a file
            Path(partial).write_text(json.dumps(found, sort_keys=True))
    except OSError:                                  # a read-only state dir costs the time, nothing else
        pass
    return found


def _installed_key() -> str:
    """The sys.path folders that hold distributions, with their metadata folders' names. A folder without any
    is left out: a Dask scheduler in this process puts its own scratch folder (a new name each time) on sys.path,
    which made every run miss the cache."""
    digest = hashlib.sha256()
    for entry in sys.path:
        folder = Path(entry or ".")
        if folder.is_dir():
            names = sorted(name for name in os.listdir(folder) if name.endswith((".dist-info", ".egg-info")))
            if names:
                digest.update("\0".join([str(folder.resolve()), *names, "\n"]).encode())
    return digest.hexdigest()[:DIGEST_LENGTH]


def _distribution_versions(top_level_modules: set[str]) -> set[tuple[str, str]]:
    """(distribution, version) of each imported top-level module; a module that is not installed (an optional
    import) counts as absent, so installing it later changes the version too."""
    versions: set[tuple[str, str]] = set()
    for module in top_level_modules:
        distributions = _distribution_versions_by_module().get(module)
        if not distributions:
            versions.add((module, "absent"))
        versions.update((name, version) for name, version in distributions or ())
    return versions
