"""A finished run's model from its sharded (DCP) checkpoint, in one process: the config it was saved with and its
weights as one plain state dict (what an exported or logged model holds)."""
from __future__ import annotations

import json
import os
import warnings

import torch

from training.checkpoint import COMPLETE
from training.model import Transformer
from training.shapes import ModelConfig


def checkpoint_model_config(checkpoint: str) -> ModelConfig:
    """The model config a checkpoint was saved with (kept in its completion marker)."""
    with open(os.path.join(checkpoint, COMPLETE)) as handle:
        return ModelConfig(**json.load(handle)["model"])


def consolidated_weights(checkpoint: str, out_path: str) -> str:
    """The model's weights from a sharded (DCP) checkpoint as one plain state dict, read in this one process."""
    import torch.distributed.checkpoint as dcp

    state = {"model": Transformer(checkpoint_model_config(checkpoint)).state_dict()}
    with warnings.catch_warnings():     # torch warns on every single-process load; one process is the intent here
        warnings.filterwarnings("ignore", message="torch.distributed is disabled", category=UserWarning)
        dcp.load(state, checkpoint_id=checkpoint, no_dist=True)    # one process reads every rank's shards
    torch.save(state["model"], out_path)
    return out_path
