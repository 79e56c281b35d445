"""A warm trainer: the ranks of one torchrun train job after job, so that a flow training several runs in turn (an
ablation's arms, a sweep's points) pays torchrun's start-up once rather than once a run: the launcher and every
rank importing torch and the trainer, ~8 s on a CPU machine, more on a GPU one (CUDA and NCCL set-up).

The flow (flows/trainer_pool.py) writes job `N` as `FOLDER/N.json`: the training config's path and the environment
the run adds (its MLflow writer's address; a trainer hook, training/train.py), which the next job does not see.
Every rank waits for the file, then trains it as `training.train` trains one config: its own process group (meeting
under a prefix of its own in torchrun's store: under one prefix, a group would meet at the addresses the last,
destroyed one left there), a Trainer built from the config alone, the group destroyed at the end. Rank 0 then prints
`{"job_done": N}`, the flow's sign that the run is over. A job that fails ends the ranks, as a failed run ends its
torchrun. Ranks left without a job for `IDLE_S` exit, as after a run.

What one run leaves in the process is reset before the next: compiled graphs (`torch._dynamo`, whose cache limit
would otherwise turn later runs eager), the CUDA allocator's cached blocks and its peak-memory figure. The trainer
seeds its own random state from its config, so a run's result does not depend on the runs before it
(tests/test_sweep_e2e.py)."""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from storage.environment import added_environment

IDLE_S = 300.0          # a warm trainer no flow has used this long is not coming back to
POLL_S = 0.05
DONE_KEY = "job_done"


def job_file(folder: str, index: int) -> Path:
    """Job `index`'s file (the flow side imports this module without torch)."""
    return Path(folder) / f"{index}.json"


def serve(folder: str, train: Callable) -> None:
    """Train each job `folder` receives, in order, until none comes for `IDLE_S` seconds."""
    import torch.distributed as dist

    from configs.training import load_training_config

    rank = int(os.environ["RANK"])
    store, _, _ = next(dist.rendezvous("env://"))
    index = 0
    while (job := _next_job(job_file(folder, index))) is not None:
        with added_environment(job["env"]):
            train(load_training_config(job["config"]), dist.PrefixStore(f"job-{index}", store))
        _reset_process_state()
        if rank == 0:
            print(json.dumps({DONE_KEY: index}), flush=True)
        index += 1


def _next_job(path: Path) -> dict | None:
    deadline = time.monotonic() + IDLE_S
    while not path.exists():
        if time.monotonic() > deadline:
            return None
        time.sleep(POLL_S)
    return json.loads(path.read_text())


def _reset_process_state() -> None:
    import torch

    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()      # a run's logged peak memory is its own
