"""The trainer's entry, one process per rank under torchrun:

    torchrun --nproc-per-node 2 -m training.train configs/train.yaml
    torchrun --nproc-per-node 2 -m training.train --jobs FOLDER      # a warm trainer (training/jobs.py)

It joins the process group, builds the `Trainer` (training/trainer.py) and runs it. `SLUICE_TRAIN_HOOK`, when set,
names a function (`module:function`, importable on the ranks' PYTHONPATH) that receives the Trainer before it trains
and may wrap its parts: how the tests inject faults (tests/training_drills.py) and stop a run part-way
(dev/interrupted_run.py), and how benchmarks/parallelism.py times the pipeline's stages.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

import torch.distributed as dist

from configs.training import TrainingConfig, load_training_config
from tracking.run_logger import RunLogger
from training.launcher_death import die_with_launcher
from training.parallel import init_distributed
from training.trainer import Trainer

HOOK_ENV = "SLUICE_TRAIN_HOOK"


def train(config: TrainingConfig, store=None) -> None:
    """Train `config` on this rank; `store`: where its process group meets (default: torchrun's address)."""
    env = init_distributed(config.hardware.tensor_parallel, config.hardware.pipeline_parallel, store)
    logger = RunLogger(config, enabled=env.is_main and config.mlflow.enabled)
    try:
        trainer = Trainer(config, env, logger)
        run_hook(trainer)
        trainer.train()
    except BaseException:
        logger.finish("FAILED")
        raise
    dist.barrier()
    dist.destroy_process_group()


def run_hook(trainer: Trainer) -> None:
    """Hand the trainer to the function `SLUICE_TRAIN_HOOK` names, if any."""
    named = os.environ.get(HOOK_ENV)
    if not named:
        return
    module, _, function = named.partition(":")
    if not function:
        raise ValueError(f"${HOOK_ENV} is {named!r}: give module:function")
    getattr(importlib.import_module(module), function)(trainer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="sluice trainer (run under torchrun)")
    parser.add_argument("config", nargs="?")
    parser.add_argument("--jobs", help="a warm trainer: train each job this folder receives (training/jobs.py)")
    args = parser.parse_args(argv)
    if (args.config is None) == (args.jobs is None):
        parser.error("give a training config or --jobs FOLDER")
    die_with_launcher()
    if args.jobs:
        from training.jobs import serve

        serve(args.jobs, train)
    else:
        train(load_training_config(args.config))
    return 0


def _leave(status: int) -> None:
    """End a finished rank without the interpreter's teardown. The run is over: its checkpoint and MLflow run are
    written and closed, its process group destroyed. The teardown's full garbage collections over every object
    torch, MLflow and pydantic made took about 2 s per rank, and the C++ destructors it runs sometimes aborted a
    rank whose training had finished ("terminate called without an active exception", SIGABRT: about one 2-rank
    run in 20 under the test suite), which failed the run."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    _leave(main())          # an error still goes the usual way: its traceback printed, exit status 1
