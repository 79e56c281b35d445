"""Checkpoints with torch.distributed.checkpoint: model and optimizer (sharded, each rank writes its part), plus
per-rank files for what is not a tensor of the model: step, data position and RNG states.

A checkpoint is the folder `step-NNNNNN/`; it counts only once `complete` is written in it (last, by rank 0
after every rank has finished), so a run killed while saving resumes from the previous one. `complete` also
records the model's shape: a checkpoint of another model, or one that cannot be read, is a `CheckpointError`
naming the folder, never a silent fresh start.

A checkpoint resumes under any layout (pipeline x data x tensor parallel ranks): DCP reshards the model's and the
optimizer's tensors by parameter name (the optimizer's state is saved flattened, per parameter name, so a pipeline
stage reads its parameters' share and a one-stage run reads them all), and `complete` records the layout saved
under. A rank of the same layout reads its own file; under another layout every rank reads rank 0's, since what it
holds is the same on every rank (the counter, the spike history and the scale come from reduced figures, the
data position is the replicas' common step, which the data reader deals out anew: training/sequences.py).
"""
from __future__ import annotations

import json
import os
import re

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict

COMPLETE = "complete"
OPTIONS = StateDictOptions(flatten_optimizer_state_dict=True)
_STEP_DIR = re.compile(r"^step-(\d{6,})$")


class CheckpointError(RuntimeError):
    """A complete-marked checkpoint that is corrupt or belongs to a different model."""


def checkpoint_step(folder: str) -> int:
    """The training step a checkpoint folder (`step-NNNNNN`) was saved at."""
    match = _STEP_DIR.match(os.path.basename(folder.rstrip("/")))
    if not match:
        raise CheckpointError(f"{folder} is not a checkpoint folder (step-NNNNNN)")
    return int(match.group(1))


def latest_checkpoint(root: str) -> str | None:
    """The newest complete checkpoint folder under `root`, or None."""
    if not os.path.isdir(root):
        return None
    steps = sorted((int(match.group(1)), name) for name in os.listdir(root)
                   if (match := _STEP_DIR.match(name)) and os.path.exists(os.path.join(root, name, COMPLETE)))
    return os.path.join(root, steps[-1][1]) if steps else None


def checkpoint_folder(root: str, step: int) -> str:
    return os.path.join(root, f"step-{step:06d}")


def save_checkpoint(root: str, step: int, model, optimizer, trainer_state: dict, rank: int, layout: dict) -> str:
    """`trainer_state`: this rank's non-tensor state (data position, spike history, attempt counter). `layout`:
    the run's ranks per dimension, {pipeline_parallel, data_parallel, tensor_parallel}."""
    folder = checkpoint_folder(root, step)
    model_state, optimizer_state = get_state_dict(model, optimizer, options=OPTIONS)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=folder)
    torch.save({"step": step, "trainer": trainer_state, "rng": torch.get_rng_state()},
               os.path.join(folder, f"rank-{rank}.pt"))
    dist.barrier()
    if rank == 0:
        with open(os.path.join(folder, COMPLETE), "w") as handle:
            json.dump({"step": step, "world_size": dist.get_world_size(), "layout": layout,
                       "model": model.config.to_dict()}, handle)
    dist.barrier()
    return folder


def load_checkpoint(folder: str, model, optimizer, rank: int, layout: dict) -> dict:
    """Restore model and optimizer in place, resharded to `layout` if it was saved under another; returns this
    rank's {step, trainer, rng} (RNG already restored) and the `layout` it was saved under."""
    marker = _marker(folder)
    _check_same_model(folder, marker["model"], model.config.to_dict())
    saved_layout = marker["layout"]
    model_state, optimizer_state = get_state_dict(model, optimizer, options=OPTIONS)
    state = {"model": model_state, "optimizer": optimizer_state}
    own_file = f"rank-{rank if saved_layout == layout else 0}.pt"
    try:
        dcp.load(state, checkpoint_id=folder)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"],
                       options=OPTIONS)
        # weights_only: the file holds only tensors, numbers, strings, lists and dicts; nothing is unpickled.
        extra = torch.load(os.path.join(folder, own_file), weights_only=True)
    except (Exception, CheckpointException) as error:      # DCP's exception is a BaseException
        raise CheckpointError(f"checkpoint {folder} cannot be read ({type(error).__name__}: {str(error)[:300]}); "
                              f"remove that folder to resume from the one before, or point checkpoint.dir at "
                              f"a new folder to start over") from error
    torch.set_rng_state(extra["rng"])
    return extra | {"layout": saved_layout}


def _marker(folder: str) -> dict:
    """The completion marker: the step, the layout and the model saved."""
    try:
        with open(os.path.join(folder, COMPLETE)) as handle:
            marker = json.load(handle)
        missing = {"model", "layout"} - set(marker)
    except (OSError, ValueError, TypeError) as error:
        raise CheckpointError(f"checkpoint {folder}: its `{COMPLETE}` marker cannot be read ({error})") from error
    if missing:
        raise CheckpointError(f"checkpoint {folder}: its `{COMPLETE}` marker lacks {', '.join(sorted(missing))}")
    return marker


def _check_same_model(folder: str, saved: dict, model_config: dict) -> None:
    differing = sorted(key for key in model_config if saved.get(key) != model_config[key])
    if differing:
        raise CheckpointError(f"checkpoint {folder} is of another model (differs in {', '.join(differing)}: "
                              f"saved {({k: saved.get(k) for k in differing})}, configured "
                              f"{({k: model_config[k] for k in differing})}); use a new checkpoint.dir for a new model")
