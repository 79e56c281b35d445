"""Base class for every recipe model: unknown keys are errors, values are validated on assignment."""
from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


def merged(base: dict, overrides: dict) -> dict:
    """`overrides` laid over `base`, mappings merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in overrides.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
