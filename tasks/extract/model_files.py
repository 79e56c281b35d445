"""The extraction's learned models, shipped as data files in tasks/extract/models/: the block selector's trees
(written by dev/block_selector.py) and the boilerplate classifier's weights (dev/boilerplate_classifier.py). Each is
read once per process, when first used, and named by its content in the extract stage's fingerprint
(`model_identities`), so a retrained model reruns the stage as a changed language-ID model does."""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from configs.html import HtmlTextConfig

MODELS_DIR = Path(__file__).resolve().parent / "models"
BLOCK_SELECTOR = "block_selector.json"
BOILERPLATE_CLASSIFIER = "boilerplate_classifier.json"


@functools.cache
def load_model(name: str, features: tuple[str, ...]) -> dict:
    """The model file `name`, checked to be fitted on `features` (the names its evaluator computes, in order)."""
    model = json.loads((MODELS_DIR / name).read_text())
    if tuple(model["features"]) != features:
        raise ValueError(f"{MODELS_DIR / name} was fitted on other features than the code computes: retrain it "
                         f"with {model['generator']}")
    return model


def write_model(name: str, generator: str, description: str, features: tuple[str, ...], **fitted) -> Path:
    """Write a model file: who wrote it, what it is, the features it reads, then its `fitted` values (JSON's
    floats round-trip exactly). One line per list, so a retrained model's diff stays readable."""
    fields = {"generator": generator, "description": description, "features": list(features), **fitted}
    lines = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in fields.items() if key != "trees"]
    if "trees" in fields:
        lines.append('  "trees": [\n' + ",\n".join(f"    {json.dumps(tree)}" for tree in fields["trees"]) + "\n  ]")
    path = MODELS_DIR / name
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    return path


def model_identities(config: HtmlTextConfig) -> list[dict]:
    """The content identity of every model file the extraction under `config` reads."""
    if config.engine != "resiliparse":
        return []
    used = ([BLOCK_SELECTOR] if config.main_content and config.block_selector else []) + (
        [BOILERPLATE_CLASSIFIER] if config.max_boilerplate_probability is not None else [])
    return [{"model": name, "sha256": hashlib.sha256((MODELS_DIR / name).read_bytes()).hexdigest()}
            for name in used]
