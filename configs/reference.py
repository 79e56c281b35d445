"""The configuration reference, generated from the pydantic models' fields (type, default, description), so it
cannot drift from what the code accepts: `sluice recipe-reference` prints it, `docs/recipe.md` holds it and a
test keeps the two equal."""
from __future__ import annotations

import json
import re

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

HEADER = ("# Configuration reference\n\nGenerated from the pydantic models by `sluice recipe-reference` (a test "
          "keeps this file current). Nested sections are listed by their dotted names.\n")


def _type_name(annotation) -> str:
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return re.sub(r"\b(?:[a-z_]+\.)+(?=[A-Za-z_])", "", str(annotation).replace("NoneType", "None"))


def _default(field) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        value = field.default_factory()
    else:
        return "required"
    if isinstance(value, BaseModel):
        return "(section)"
    return f"`{json.dumps(value, default=str)}`"


def _section_model(annotation) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def field_rows(model: type[BaseModel], prefix: str = "") -> list[str]:
    """One markdown table row per field, depth first; a nested model's fields follow under its dotted name."""
    rows = []
    for name, field in model.model_fields.items():
        dotted = f"{prefix}{name}"
        nested = _section_model(field.annotation)
        description = (field.description or "").replace("|", "\\|").replace("\n", " ")
        rows.append(f"| `{dotted}` | {_type_name(field.annotation).replace('|', '&#124;')} | "
                    f"{_default(field).replace('|', '&#124;')} | {description} |")
        if nested:
            rows += field_rows(nested, f"{dotted}.")
    return rows


def reference_markdown() -> str:
    from configs.ablation import AblationConfig
    from configs.mix_search import MixSearchConfig
    from configs.schema import Recipe
    from configs.sweep import SweepConfig
    from configs.training import TrainingConfig

    sections = [("Recipe (`sluice run`, `configs/demo.yaml`)", Recipe),
                ("Training config (`sluice train`, a recipe's `train:`)", TrainingConfig),
                ("Ablation (`sluice ablate`, `configs/ablation.yaml`)", AblationConfig),
                ("Mixture search (`sluice mix-search`, `configs/mix_search.yaml`)", MixSearchConfig),
                ("Sweep (`sluice sweep`, `configs/ladder.yaml`)", SweepConfig)]
    parts = [HEADER]
    for title, model in sections:
        parts += [f"## {title}", "", "| field | type | default | description |", "|---|---|---|---|",
                  *field_rows(model), ""]
    return "\n".join(parts)
