"""The GPU check's CPU mode, so that the command prepared for a lent GPU never rots between GPU runs: it runs the
real trainer under torchrun where MLflow, Prefect and Dask cannot be imported (as on the GPU machines' image), and
writes every figure the GPU run commits."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

ABSENT_ON_THE_GPU_IMAGE = ("mlflow", "prefect", "dask", "distributed", "datasketch", "fasttext", "kenlm")
IMAGE = f'''import sys

ABSENT = {ABSENT_ON_THE_GPU_IMAGE!r}


class NotOnTheImage:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ABSENT:
            raise ImportError(f"{{name}} is not on the GPU image")
        return None


sys.meta_path.insert(0, NotOnTheImage())
'''
KEYS = ("device", "torch", "cuda", "command", "mfu_124m_bf16_compile", "tokens_per_s_124m", "peak_memory_gb",
        "plan_memory_gb", "bf16_vs_fp32_max_loss_gap", "resume_exact", "rerun_max_loss_gap", "mfu_350m_bf16_compile")


def test_the_gpu_check_runs_the_trainer_on_cpu_without_mlflow_and_writes_every_figure(tmp_path):
    image = tmp_path / "image"
    image.mkdir()
    (image / "sitecustomize.py").write_text(IMAGE)
    env = os.environ | {"PYTHONPATH": str(image)}
    assert subprocess.run([sys.executable, "-c", "import mlflow"], env=env, capture_output=True).returncode != 0

    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--device", "cpu", "--out", str(out),
                           "--budget-s", "100000",                      # the bigger model too, however busy the machine
                           "--clean-commit", "0" * 40],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "gpu.json").read_text())
    assert set(KEYS) <= set(result) and (result["commit"], result["dirty"]) == ("0" * 40, False)
    assert result["errors"] == {} and result["bigger_error"] is None, result
    assert all(rate > 0 for rate in result["tokens_per_s"].values()) and result["tokens_per_s_350m"] > 0
    assert result["resume_exact"] is True and result["rerun_max_loss_gap"] == 0.0
    assert result["bf16_within_tolerance"] is True and result["bf16_vs_fp32_max_loss_gap"] > 0   # really bf16
    assert max(result["final_loss"].values()) < 5.0        # trained: uniform over the 256 byte values is 5.55
    assert "resume: exact True" in done.stdout and (out / "gpu_check.log").stat().st_size > 0
    assert sorted(path.name for path in out.iterdir()) == ["gpu.json", "gpu_check.log"]   # what a device call returns


def test_the_gpu_profile_runs_the_trainers_model_step_on_cpu_and_splits_its_time(tmp_path):
    done = subprocess.run([sys.executable, "benchmarks/gpu_profile.py", "--device", "cpu", "--out", str(tmp_path),
                           "--steps", "3"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "gpu_profile.json").read_text())
    assert result["step_ms"] > 0 and result["tokens_per_s"] > 0
    by_family = result["device_ms_per_step_by_family"]
    assert by_family["matmul"] > 0 and by_family["attention"] > 0 and by_family["optimizer"] > 0
    assert "aten::mm" in (tmp_path / "gpu_profile.txt").read_text()
