"""The process's environment, changed for the length of a block."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def added_environment(added: dict[str, str]) -> Iterator[None]:
    """`added` in the environment for the block's duration, each variable's value before restored after."""
    before = {name: os.environ.get(name) for name in added}
    os.environ.update(added)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
