"""A curation recipe's `train:` section made concrete: the mixture's shards, the tokenizer's vocabulary and
bytes per token, a checkpoint folder keyed by what the run depends on (the trainer's code included), and MLflow
lineage tags."""
from __future__ import annotations

import glob
import hashlib
import json
import os

from configs.schema import Recipe
from configs.training import TrainingConfig
from storage.code_version import code_version
from storage.stage_figures import TokenizerFigures
from storage.stage_result import StageResult, stage_file, stage_shard_urls
from tasks.mixture.splits import TRAIN_SPLIT, VALIDATION_SPLIT, split_bases
from tasks.tokenize.train import MODEL_FILE
from tracking.datasets import RunDataset

TRAINER_ENTRY = "training.train"         # what torchrun runs: its import closure is the trainer's code
TRAINER_CODE_TAG = "sluice.trainer_code"


def trainer_code_version() -> str:
    """The trainer's code version, derived as a data stage's is: the source of every project module
    `training.train` reaches and the versions of the libraries they import (`storage.code_version`)."""
    return code_version(TRAINER_ENTRY)


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
    """`spec` made concrete for a mixture and tokenizer (stage results). The checkpoint folder is
    `<store>/train/<run key>-<trainer code version>`: the same run by the same code finds its checkpoints again,
    and after an edit to the trainer's code the run trains anew."""
    bases = [url.removesuffix(".bin") for url in stage_shard_urls(mixture)]
    figures = TokenizerFigures.of(tokenizer)
    return train_on_shards(spec, name, run_folder(store, spec, tokenizer, mixture), bases,
                           stage_file(tokenizer, MODEL_FILE), figures.vocab_size, figures.heldout_bytes_per_token,
                           experiment, tracking_uri,
                           tags | {"sluice.mixture_manifest": mixture["manifest"],
                                   "sluice.mixture_digest": mixture["digest"],
                                   "sluice.tokenizer_digest": tokenizer["digest"]})


def train_on_shards(spec: TrainingConfig, name: str, checkpoint_dir: str, bases: list[str], tokenizer_model: str,
                    vocab_size: int, bytes_per_token: float | None, experiment: str, tracking_uri: str,
                    tags: dict[str, str]) -> TrainingConfig:
    """`spec` made concrete for token shards (`bases`: a mixture's train.* and validation.* shards) and a
    tokenizer, checkpointing to `checkpoint_dir` (whose name ends with the trainer's code version, see
    run_folder)."""
    return spec.model_copy(deep=True, update={
        "name": name,
        "model": spec.model.model_copy(update={"vocab_size": vocab_size}),
        "data": spec.data.model_copy(update={
            "train": split_bases(bases, TRAIN_SPLIT),
            "validation": split_bases(bases, VALIDATION_SPLIT),
            "tokenizer": tokenizer_model,
            "bytes_per_token": bytes_per_token}),
        "checkpoint": spec.checkpoint.model_copy(update={"dir": checkpoint_dir}),
        "mlflow": spec.mlflow.model_copy(update={
            "experiment": experiment, "tracking_uri": tracking_uri,
            "tags": {**spec.mlflow.tags, **tags, TRAINER_CODE_TAG: checkpoint_dir.rpartition("-")[2]}}),
    })


def run_folder(store: str, spec: TrainingConfig, tokenizer: StageResult, mixture: StageResult) -> str:
    """`<store>/train/<run key>-<trainer code version>`; the run key hashes the spec and the data's digests."""
    key = hashlib.sha256(json.dumps([spec.model_dump(mode="json"), mixture["digest"], tokenizer["digest"]],
                                    sort_keys=True).encode()).hexdigest()[:16]
    return f"{store}/train/{key}-{trainer_code_version()}"


def older_code_checkpoints(checkpoint_dir: str) -> list[str]:
    """The checkpoint folders of the same run trained by other versions of the trainer's code, newest first."""
    head = checkpoint_dir.rpartition("-")[0]
    found = [path for path in glob.glob(f"{glob.escape(head)}-*") if path != checkpoint_dir and os.path.isdir(path)]
    return sorted(found, key=os.path.getmtime, reverse=True)

