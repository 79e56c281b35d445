"""A script that starts a run without `if __name__ == "__main__":` is stopped before its Dask workers start.

LocalCluster's worker processes are spawned, and a spawned process imports the script that started it again
(multiprocessing's spawn start method): unguarded, every worker would start the run again, fail to start processes
of its own while it is still starting ("the bootstrapping phase"), and the run would end in a screen of tracebacks
from workers that never came up. Checked once, in the process that starts the cluster: is the script's statement
that led here inside an `if __name__ == "__main__":` block?"""
from __future__ import annotations

import ast
import sys
import threading
from pathlib import Path


class UnguardedScript(RuntimeError):
    """The run was started by a script's top-level statement outside a main guard."""


def check_main_guard() -> None:
    """Raise UnguardedScript, naming the script, its line and the fix, when a script's unguarded top-level statement
    started this run (a console script, `python -m`, pytest and notebooks are guarded or have no script)."""
    line = unguarded_line()
    if line is not None:
        script = sys.modules["__main__"].__file__
        raise UnguardedScript(f"{script}, line {line}, starts the run at the script's top level: put it under "
                              f'`if __name__ == "__main__":` (Dask\'s worker processes import the script again, and '
                              f"would start the run again each)")


def unguarded_line() -> int | None:
    """The line of the `__main__` script's top-level statement that is running now, if it is outside every
    `if __name__ == "__main__":` block; None when guarded or when no script is running."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path or not str(path).endswith(".py") or not Path(path).is_file():
        return None
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    guards = [node for node in ast.parse(Path(path).read_text()).body if _is_main_guard(node)]
    return None if any(guard.lineno <= line <= guard.end_lineno for guard in guards) else line


def _is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either side of the ==), alone or as one term of an `and`."""
    if not isinstance(node, ast.If):
        return False
    terms = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) \
        else [node.test]
    return any(_is_main_test(term) for term in terms)


def _is_main_test(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1:
        return False
    sides = {ast.unparse(test.left), ast.unparse(test.comparators[0])}
    return isinstance(test.ops[0], ast.Eq) and sides == {"__name__", "'__main__'"}     # unparse quotes with '
