"""Which project modules a stage's own code calls in this process, read from the running code, not listed by
hand: a `sys.settrace` hook (calls only, no line events) notes every call, with its caller, made in a stage's
thread between the start and the return of `tasks.stage_run.run_stage`. A project function called through a
library (a context manager, a Prefect task) counts as called by the nearest project code up the stack.

The hook is set only while `run_stage` runs, in its thread (the names it is called by are wrapped): set for the
whole flow, it made every call of the flow's orchestration a Python callback, ~14 s of the demo's 33 s."""
from __future__ import annotations

import sys
from collections import defaultdict
from functools import wraps
from pathlib import Path
from types import CodeType, FrameType
from typing import Callable

import flows.stage_runner
import tasks.stage_run
from tasks.stage_run import run_stage

CALLERS = ((tasks.stage_run, "run_stage"), (flows.stage_runner, "run_stage_with"))     # the names run_stage has

PROJECT_ROOT = Path(__file__).resolve().parent.parent
NOT_PROJECT = (".venv", "tests")
PROJECT_PREFIX = f"{PROJECT_ROOT}/"
OUTSIDE_PREFIXES = tuple(f"{PROJECT_ROOT}/{folder}/" for folder in NOT_PROJECT)


class StageTrace:
    """`with StageTrace() as trace:` around a flow; then `trace.roots` (stage -> the module that defines it) and
    `trace.called_by_stage_code(stage, orchestrates)`."""

    def __init__(self) -> None:
        self.roots: dict[str, str] = {}
        self._calls: dict[str, set[tuple[CodeType | None, CodeType]]] = {}    # stage -> (caller, callee) codes
        self._stage: set | None = None      # the running stage's calls; stages run one after another

    def __enter__(self) -> StageTrace:
        for module, name in CALLERS:
            setattr(module, name, self._traced(run_stage))
        return self

    def __exit__(self, *exc_info) -> None:
        for module, name in CALLERS:
            setattr(module, name, run_stage)

    def _traced(self, function: Callable) -> Callable:
        @wraps(function)
        def traced(*args, **kwargs):
            previous = sys.gettrace()
            sys.settrace(self._on_call)
            try:
                return function(*args, **kwargs)
            finally:
                sys.settrace(previous)
        return traced

    def called_by_stage_code(self, stage: str, orchestrates: Callable[[str], bool]) -> set[str]:
        """The project modules the stage's own code called, directly or through each other: followed from the
        module that defines the stage, not through the modules `orchestrates` names (what they call is theirs)."""
        callees: dict[str, set[str]] = defaultdict(set)
        for caller, callee in self._calls[stage]:
            caller_module, callee_module = (_project_module(code.co_filename) if code else None
                                            for code in (caller, callee))
            if caller_module and callee_module:
                callees[caller_module].add(callee_module)
        reached, pending = set(), [self.roots[stage]]
        while pending:
            module = pending.pop()
            if module not in reached and not orchestrates(module):
                reached.add(module)
                pending.extend(callees[module])
        return reached

    def _on_call(self, frame: FrameType, event: str, arg) -> object:
        if frame.f_code is run_stage.__code__:
            self._stage = set()             # named once `run_stage` returns: its `spec` is known by then
            return self._on_stage_event
        if self._stage is not None:
            self._stage.add((_project_caller(frame), frame.f_code))
        return None                          # no line events in the callee

    def _on_stage_event(self, frame: FrameType, event: str, arg) -> object:
        if event == "return":
            spec = frame.f_locals["spec"]
            self.roots[spec.name] = spec.code_root
            self._calls.setdefault(spec.name, set()).update(self._stage)
            self._stage = None
        return self._on_stage_event


def _project_caller(frame: FrameType) -> CodeType | None:
    """The caller's code, or for project code called from a library, the nearest project code up the stack."""
    caller = frame.f_back
    if caller is None or not _in_project(frame.f_code.co_filename):
        return caller.f_code if caller else None
    while caller is not None and not _in_project(caller.f_code.co_filename):
        caller = caller.f_back
    return caller.f_code if caller else None


def _in_project(filename: str) -> bool:
    return filename.startswith(PROJECT_PREFIX) and not filename.startswith(OUTSIDE_PREFIXES)


def _project_module(filename: str) -> str | None:
    try:
        relative = Path(filename).resolve().relative_to(PROJECT_ROOT)
    except ValueError:
        return None
    if relative.parts[0] in NOT_PROJECT or relative.suffix != ".py":
        return None
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
