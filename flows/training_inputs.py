"""A curation recipe's `train:` section made concrete: the mixture's shards, the tokenizer's vocabulary and
bytes per token, a checkpoint folder keyed by what the run depends on, and MLflow lineage tags."""
from __future__ import annotations

import hashlib
import json

from configs.schema import Recipe
from configs.training import TrainingConfig
from storage.manifest import Manifest


def training_config(recipe: Recipe, tokenizer: dict, mixture: dict, tracking_uri: str,
                    curation_run_id: str) -> TrainingConfig:
    mixture_dir = mixture["manifest"].rsplit("/", 1)[0]
    bases = [f"{mixture_dir}/{entry.path.removesuffix('.bin')}" for entry in Manifest.load(mixture["manifest"]).shards]
    spec = recipe.train
    key = hashlib.sha256(json.dumps([spec.model_dump(mode="json"), mixture["digest"], tokenizer["digest"]],
                                    sort_keys=True).encode()).hexdigest()[:16]
    vocab_size = tokenizer["stats"]["notes"]["vocab_size"]
    return spec.model_copy(deep=True, update={
        "name": f"{recipe.name}-{spec.name}",
        "model": spec.model.model_copy(update={"vocab_size": vocab_size}),
        "data": spec.data.model_copy(update={
            "train": [base for base in bases if base.rsplit("/", 1)[-1].startswith("train.")],
            "validation": [base for base in bases if base.rsplit("/", 1)[-1].startswith("validation.")],
            "tokenizer": f"{tokenizer['manifest'].rsplit('/', 1)[0]}/tokenizer.model",
            "bytes_per_token": tokenizer["stats"].get("summary", {}).get("heldout_bytes_per_token")}),
        "checkpoint": spec.checkpoint.model_copy(update={"dir": f"{recipe.store}/train/{key}"}),
        "mlflow": spec.mlflow.model_copy(update={
            "experiment": recipe.mlflow.experiment, "tracking_uri": tracking_uri,
            "tags": {**spec.mlflow.tags, "sluice.curation_run": curation_run_id,
                     "sluice.mixture_manifest": mixture["manifest"], "sluice.mixture_digest": mixture["digest"],
                     "sluice.tokenizer_digest": tokenizer["digest"]}}),
    })
