"""A curation recipe's `train:` section made concrete: the mixture's shards, the tokenizer's vocabulary and
bytes per token, a checkpoint folder keyed by what the run depends on, and MLflow lineage tags."""
from __future__ import annotations

import hashlib
import json

from configs.schema import Recipe
from configs.training import TrainingConfig
from storage.stage_result import StageResult, stage_file, stage_shard_urls
from tasks.mixture.splits import TRAIN_SPLIT, VALIDATION_SPLIT, split_bases
from tasks.tokenize.train import MODEL_FILE
from tracking.datasets import RunDataset


def mixture_dataset(mixture: StageResult) -> RunDataset:
    """The mixture a run trains on, as its MLflow training dataset."""
    return RunDataset(f"mixture-{mixture['fingerprint']}", mixture["manifest"], mixture["digest"], "training")


def training_config(recipe: Recipe, tokenizer: StageResult, mixture: StageResult, tracking_uri: str,
                    curation_run_id: str) -> TrainingConfig:
    return train_on_mixture(recipe.train, f"{recipe.name}-{recipe.train.name}", recipe.store, recipe.mlflow.experiment,
                            tokenizer, mixture, tracking_uri, {"sluice.curation_run": curation_run_id})


def train_on_mixture(spec: TrainingConfig, name: str, store: str, experiment: str, tokenizer: StageResult,
                     mixture: StageResult,
                     tracking_uri: str, tags: dict[str, str]) -> TrainingConfig:
    """`spec` made concrete for a mixture and tokenizer (stage results); the checkpoint folder is keyed by the spec
    and the two digests, so the same run finds its checkpoints again."""
    bases = [url.removesuffix(".bin") for url in stage_shard_urls(mixture)]
    key = hashlib.sha256(json.dumps([spec.model_dump(mode="json"), mixture["digest"], tokenizer["digest"]],
                                    sort_keys=True).encode()).hexdigest()[:16]
    vocab_size = tokenizer["stats"]["notes"]["vocab_size"]
    return spec.model_copy(deep=True, update={
        "name": name,
        "model": spec.model.model_copy(update={"vocab_size": vocab_size}),
        "data": spec.data.model_copy(update={
            "train": split_bases(bases, TRAIN_SPLIT),
            "validation": split_bases(bases, VALIDATION_SPLIT),
            "tokenizer": stage_file(tokenizer, MODEL_FILE),
            "bytes_per_token": tokenizer["stats"].get("summary", {}).get("heldout_bytes_per_token")}),
        "checkpoint": spec.checkpoint.model_copy(update={"dir": f"{store}/train/{key}"}),
        "mlflow": spec.mlflow.model_copy(update={
            "experiment": experiment, "tracking_uri": tracking_uri,
            "tags": {**spec.mlflow.tags, **tags,
                     "sluice.mixture_manifest": mixture["manifest"], "sluice.mixture_digest": mixture["digest"],
                     "sluice.tokenizer_digest": tokenizer["digest"]}}),
    })

