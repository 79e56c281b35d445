"""Nested configs as MLflow params: dotted keys, values cut to what MLflow stores."""
from __future__ import annotations

MAX_PARAM_LENGTH = 6000


def flatten(prefix: str, value, out: dict[str, str] | None = None) -> dict[str, str]:
    out = {} if out is None else out
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
    else:
        out[prefix] = str(value)[:MAX_PARAM_LENGTH]
    return out
