"""An interrupted training, for the checks of resuming (tests/, benchmarks/gpu_check.py): a trainer hook
(training/train.py's SLUICE_TRAIN_HOOK) that ends the run after a given step, its checkpoints and logged rows as a
run killed then would have left them, without the run's end (its final checkpoint, evaluation and MLflow status)."""
from __future__ import annotations

import os

from training.train import HOOK_ENV

STOP_ENV = "SLUICE_STOP_AFTER"


def stop_after_env(step: int) -> dict[str, str]:
    """The environment a trainer's ranks need to stop after `step`."""
    return {HOOK_ENV: f"{__name__}:install", STOP_ENV: str(step)}


def install(trainer) -> None:
    stop_after(trainer, int(os.environ[STOP_ENV]))


def stop_after(trainer, step: int) -> None:
    """Make `trainer.train()` stop once it has trained `step` (a run planned shorter than that ends as usual)."""
    def interrupted() -> None:
        trainer.resume()
        for done in trainer.steps():
            if done >= step:
                trainer.logger.flush()
                return
        trainer.finish()

    trainer.train = interrupted
