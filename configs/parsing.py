"""Config files read and validated: every problem a RecipeError that names the file and each bad field, one line a
field (no raw pydantic output), for recipes, training files and the files that name them alike."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError


class RecipeError(ValueError):
    """A recipe that cannot be used; the message names the file and each bad field."""


def read_yaml(path: str | Path, what: str) -> object:
    """A YAML file's content; a missing or unreadable file is a RecipeError naming it."""
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise RecipeError(f"{what} {path} does not exist") from None
    except yaml.YAMLError as error:
        raise RecipeError(f"{what} {path} is not valid YAML: {error}") from None


Config = TypeVar("Config", bound=BaseModel)


def parse_config(model: type[Config], raw: object, origin: str, what: str,
                 check: Callable[[Config], object] | None = None) -> Config:
    """`raw` validated as `model`, then `check`ed (a file that names other files checks those too); every error
    is a RecipeError naming `origin` and each bad field."""
    if not isinstance(raw, dict):
        raise RecipeError(f"{origin}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        config = model.model_validate(raw)
    except ValidationError as error:
        raise RecipeError(f"{origin}: invalid {what}\n{validation_problems(error)}") from None
    try:
        if check is not None:
            check(config)
    except RecipeError as error:
        raise RecipeError(f"{origin}: {error}") from None
    return config


def read_config_file(path: str | Path, what: str) -> dict:
    """A config file that names other files relative to itself: its mapping, with `origin` set to its folder."""
    path = Path(path)
    raw = read_yaml(path, what)
    if not isinstance(raw, dict):
        raise RecipeError(f"{path}: expected a mapping at the top level")
    return raw | {"origin": str(path.parent)}


def validation_problems(error: ValidationError) -> str:
    """One line per problem, each naming the field by its full path."""
    return "\n".join(
        f"  {'.'.join(str(part) for part in issue['loc']) or '<top>'}: {issue['msg']}"
        + (f" (got {issue['input']!r})" if issue["type"] != "missing" and not isinstance(issue["input"], dict) else "")
        for issue in error.errors())
