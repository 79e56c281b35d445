"""Warm trainers for flows that train several runs in turn (an ablation's arms, a sweep's points, a mixture
search's swarm): inside `warm_trainers()`, each training on this machine goes to a torchrun of its rank count that
is already up (training/jobs.py), started by the first run that needs it, instead of a torchrun of its own. A run
pays torchrun's start-up (~8 s on a CPU machine, the launcher's and every rank's imports) once per flow, not once
per run. Its output, its MLflow run, its checkpoints and its result are a fresh torchrun's.

A run that fails, times out or is cancelled stops its warm trainer (the whole process group, as a torchrun of its
own would be stopped); the next run starts another. The trainers stop when the block ends."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from flows.torchrun import kill_group, launcher_command, start_trainer
from training.jobs import DONE_KEY, job_file

_ACTIVE: ContextVar[WarmTrainers | None] = ContextVar("warm_trainers", default=None)


@contextmanager
def warm_trainers() -> Iterator[None]:
    """Trainings in this block share warm trainers; an inner block uses the outer one's."""
    if _ACTIVE.get() is not None:
        yield
        return
    trainers = WarmTrainers()
    token = _ACTIVE.set(trainers)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
        trainers.close()


def active() -> WarmTrainers | None:
    return _ACTIVE.get()


class WarmTrainer:
    """One torchrun serving jobs from a folder of its own."""

    def __init__(self, ranks: int):
        self.folder = tempfile.mkdtemp(prefix="sluice-trainer-")
        self.process = start_trainer([*launcher_command(ranks), "-m", "training.train", "--jobs", self.folder],
                                     subprocess.PIPE)
        self.jobs, self.done = 0, False           # done: the last job submitted ended well

    def alive(self) -> bool:
        return self.process.poll() is None

    def submit(self, config_path: str, env: dict[str, str]) -> Iterator[str]:
        """Hands the ranks the next job (`env`: added to the ranks' environment for it); returns the torchrun's
        output lines until the job is done. They end early (`done` stays False) if the trainer exits: the run
        failed."""
        index, self.jobs, self.done = self.jobs, self.jobs + 1, False
        path = job_file(self.folder, index)
        with open(f"{path}.part", "w") as handle:
            json.dump({"config": os.path.abspath(config_path), "env": env}, handle)
        os.replace(f"{path}.part", path)            # the ranks never read half a job
        return self._lines_until(json.dumps({DONE_KEY: index}))

    def _lines_until(self, done: str) -> Iterator[str]:
        for line in self.process.stdout:
            if line.strip() == done:
                self.done = True
                return
            yield line

    def stop(self) -> None:
        kill_group(self.process)
        self.process.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class WarmTrainers:
    """The warm trainers of one `warm_trainers()` block, one per rank count."""

    def __init__(self):
        self.trainers: dict[int, WarmTrainer] = {}

    def trainer(self, ranks: int) -> WarmTrainer:
        found = self.trainers.get(ranks)
        if found is None or not found.alive():
            found = self.trainers[ranks] = WarmTrainer(ranks)
        return found

    def drop(self, trainer: WarmTrainer) -> None:
        """Stops a trainer whose run did not end well; the next run starts a fresh one."""
        trainer.stop()
        self.trainers = {ranks: kept for ranks, kept in self.trainers.items() if kept is not trainer}

    def close(self) -> None:
        for trainer in self.trainers.values():
            trainer.stop()
        self.trainers = {}
