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
    return train_on_mixture(recipe.train, f"{recipe.name}-{recipe.train.name}", recipe.store, recipe.mlflow.experiment,
                            tokenizer, mixture, tracking_uri, {"sluice.curation_run": curation_run_id})


def train_on_mixture(spec: TrainingConfig, name: str, store: str, experiment: str, tokenizer: dict, mixture: dict,
                     tracking_uri: str, tags: dict[str, str]) -> TrainingConfig:
    """`spec` made concrete for a mixture and tokenizer (stage results); the checkpoint folder is keyed by the spec
    and the two digests, so the same run finds its checkpoints again."""
    mixture_dir = mixture["manifest"].rsplit("/", 1)[0]
    bases = [f"{mixture_dir}/{entry.path.removesuffix('.bin')}" for entry in Manifest.load(mixture["manifest"]).shards]
    key = hashlib.sha256(json.dumps([spec.model_dump(mode="json"), mixture["digest"], tokenizer["digest"]],
                                    sort_keys=True).encode()).hexdigest()[:16]
    vocab_size = tokenizer["stats"]["notes"]["vocab_size"]
    return spec.model_copy(deep=True, update={
        "name": name,
        "model": spec.model.model_copy(update={"vocab_size": vocab_size}),
        "data": spec.data.model_copy(update={
            "train": [base for base in bases if base.rsplit("/", 1)[-1].startswith("train.")],
            "validation": [base for base in bases if base.rsplit("/", 1)[-1].startswith("validation.")],
            "tokenizer": f"{tokenizer['manifest'].rsplit('/', 1)[0]}/tokenizer.model",
            "bytes_per_token": tokenizer["stats"].get("summary", {}).get("heldout_bytes_per_token")}),
        "checkpoint": spec.checkpoint.model_copy(update={"dir": f"{store}/train/{key}"}),
        "mlflow": spec.mlflow.model_copy(update={
            "experiment": experiment, "tracking_uri": tracking_uri,
            "tags": {**spec.mlflow.tags, **tags,
                     "sluice.mixture_manifest": mixture["manifest"], "sluice.mixture_digest": mixture["digest"],
                     "sluice.tokenizer_digest": tokenizer["digest"]}}),
    })
