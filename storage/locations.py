"""Where things live by default: the shared data directory and the project's state directory."""
from __future__ import annotations

import os
from pathlib import Path

from storage.fs import local_path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    """The third-party data set (`../shared/data` beside the checkout unless SLUICE_DATA_DIR says otherwise)."""
    configured = os.environ.get("SLUICE_DATA_DIR")
    path = Path(configured) if configured else PROJECT_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        raise FileNotFoundError(
            f"shared data directory {path} does not exist; set SLUICE_DATA_DIR to the folder "
            "that holds warc/, html/ and lid/ (normally ../shared/data beside the checkout)"
        )
    return path


def state_dir() -> Path:
    """Local state for embedded services (Prefect SQLite, MLflow SQLite, artifacts): SLUICE_STATE_DIR or ./.state."""
    path = Path(os.environ.get("SLUICE_STATE_DIR", PROJECT_ROOT / ".state"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def expand_data_dir(path: str, data_dir: str | None) -> str:
    """`{data_dir}` in a recipe path stands for the shared data directory (the recipe's, else the default)."""
    return path.replace("{data_dir}", data_dir or str(shared_data_dir())) if "{data_dir}" in path else path


def recipe_data_path(path: str, data_dir: str | None) -> str:
    """A recipe's path with `{data_dir}` expanded (`data_dir`: the recipe's), local paths made absolute: Dask
    workers may run in another directory."""
    return local_path(expand_data_dir(path, local_path(data_dir) if data_dir else None))
