"""Training runs under torchrun for the parallelism tests (tests/test_tensor_parallel.py,
tests/test_pipeline_parallel.py, tests/test_checkpoint_layouts.py): a tiny model's config on the byte shards, and the
JSON records rank 0 prints.

`training_runs` trains several configs one after another in the ranks of one torchrun, each as training/train.py's
entry trains one (`train(config)`: the process group joined, the Trainer built from the config alone,
the group destroyed at the end). A torchrun's fixed cost is its processes importing torch and the trainer (about 9 s
of CPU a rank, and the launcher's 3 s), so a test module pays it once rather than once per training. Run as a
script, this file is what those ranks run; rank 0 prints each run's name before its records and after its end."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RUNS_ENV = "SLUICE_TEST_RUNS"


def training_config(tmp_path: Path, shards: list[str], name: str, hardware: dict, **fields) -> str:
    """The file of a run with `fields` (default: the tiny model, 8 sequences per micro-batch, 4 steps, evaluated at
    the last) and `hardware` (CPU, fp32), checkpointed every 2 steps under tmp_path / name."""
    steps = fields.get("steps", 4)
    config = {"name": name, "model": {"preset": "tiny"}, "micro_batch_size": 8, "steps": steps,
              "data": {"train": shards[:3], "validation": shards[3:], "seed": 0, "bytes_per_token": 1.0},
              "eval": {"every": steps, "batches": 2}, "mlflow": {"enabled": False}, "log_every": 1,
              "optimizer": {"lr": 3e-3, "warmup_steps": 2}, "checkpoint": {"dir": str(tmp_path / name), "every": 2},
              "hardware": {"device": "cpu", "dtype": "fp32", **hardware}} | fields
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def training_records(config: str, ranks: int, *extra: str, drills: dict | None = None) -> list[dict]:
    """The JSON lines of a torchrun of `ranks` trainers (`extra`: trainer arguments; `drills`: faults injected,
    tests/training_drills.py); the run must succeed."""
    from flows.torchrun import torchrun_command
    from training_drills import drill_env

    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)} | (drill_env(**drills) if drills else {})
    done = subprocess.run([*torchrun_command(config, ranks), *extra], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def run(config: str, ranks: int | None = None, stop_after: int | None = None, drills: dict | None = None,
        hosted: bool = False) -> dict:
    """One training of `training_runs`: its config file, its ranks (default: all the torchrun's; fewer: the first
    ones, as a torchrun of that many), the step it stops after (an interrupted run), the faults injected into it
    (tests/training_drills.py); `hosted`: its MLflow run written by a writer in this process, as the training flow
    does, rather than by rank 0 itself."""
    if stop_after is not None:
        drills = (drills or {}) | {"stop_after": stop_after}
    return {"config": config, "ranks": ranks, "drills": drills, "hosted": hosted}


def script(code: str, ranks: int | None = None) -> dict:
    """A script `training_runs` runs instead of a training, on `ranks` ranks whose process group is joined (as
    `init_distributed` would); it succeeds when it returns (an assertion failing on a rank fails the torchrun)."""
    return {"script": code, "ranks": ranks}


class TrainedRuns:
    """What one torchrun of `training_runs` printed: each run's records, read by name, for a run that ended (else
    the test reading it fails, with the torchrun's error). A run that fails ends the torchrun: the runs before it
    can still be read."""

    def __init__(self, runs: list[str], stdout: str, stderr: str, returncode: int):
        self.runs, self.stderr, self.returncode = runs, stderr, returncode
        self.records: dict[str, list[dict]] = {}
        self.ended: list[str] = []
        for line in stdout.splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if set(record) == {"run"}:
                    self.records[record["run"]] = []
                elif set(record) == {"ended"}:
                    self.ended.append(record["ended"])
                else:
                    self.records[next(reversed(self.records))].append(record)

    def __getitem__(self, name: str) -> list[dict]:
        assert name in self.runs, name
        assert name in self.ended, f"{name} did not end (torchrun exited {self.returncode}): {self.stderr[-3000:]}"
        return self.records[name]


def training_runs(runs: dict[str, dict], ranks: int) -> TrainedRuns:
    """Each of `runs` (name -> `run(...)` or `script(...)`), in this order, by one torchrun of `ranks` processes."""
    from flows.torchrun import launcher_command
    from tracking.mlflow_writer import HostedWriter

    writers = {name: HostedWriter() for name, spec in runs.items() if spec.get("hosted")}
    runs = {name: spec | ({"writer": writers[name].address} if name in writers else {})
            for name, spec in runs.items()}
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), RUNS_ENV: json.dumps(runs)}
    try:
        done = subprocess.run([*launcher_command(ranks), __file__], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
    finally:
        for writer in writers.values():
            writer.close()
    return TrainedRuns(list(runs), done.stdout, done.stderr, done.returncode)


def _train_runs() -> None:
    """On each rank of `training_runs`' torchrun: training/train.py's entry, once for each run this rank is in. A
    run of fewer ranks sees the environment of a torchrun of that many (the trainer reads RANK, WORLD_SIZE and
    LOCAL_RANK); the ranks left out wait for the next run. Each run's process group meets under a prefix of its own
    in torchrun's store: under one prefix, a group would meet at the addresses the last (destroyed) group left
    there."""
    import torch.distributed as dist

    from configs.training import load_training_config
    from training.launcher_death import die_with_launcher
    from tracking.mlflow_writer import WRITER_ENV
    from training.train import HOOK_ENV, _leave, train
    from training_drills import DRILLS_ENV, drill_env

    die_with_launcher()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store, _, _ = next(dist.rendezvous("env://"))
    for index, (name, spec) in enumerate(json.loads(os.environ[RUNS_ENV]).items()):
        ranks = spec["ranks"] or world
        if rank >= ranks:
            continue
        os.environ |= {"WORLD_SIZE": str(ranks), "LOCAL_WORLD_SIZE": str(ranks)}
        for variable in (HOOK_ENV, DRILLS_ENV, WRITER_ENV):
            os.environ.pop(variable, None)
        if spec.get("writer"):
            os.environ[WRITER_ENV] = spec["writer"]
        if spec.get("drills"):
            os.environ |= {key: value for key, value in drill_env(**spec["drills"]).items() if key != "PYTHONPATH"}
        prefixed = dist.PrefixStore(f"run-{index}", store)
        if rank == 0:
            print(json.dumps({"run": name}), flush=True)
        if "script" in spec:
            dist.init_process_group("gloo", store=prefixed, rank=rank, world_size=ranks)
            exec(compile(spec["script"], name, "exec"), {"__name__": "__main__"})
            dist.barrier()          # every rank's script returned
            dist.destroy_process_group()
        else:
            train(load_training_config(spec["config"]), prefixed)
        if rank == 0:
            print(json.dumps({"ended": name}), flush=True)
    _leave(0)


if __name__ == "__main__":
    _train_runs()
