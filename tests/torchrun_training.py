"""Training runs under torchrun for the parallelism tests (tests/test_tensor_parallel.py,
tests/test_pipeline_parallel.py): a tiny model's config on the byte shards, and the JSON records rank 0 prints."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


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
