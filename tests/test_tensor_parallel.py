"""Tensor parallelism for real: torchrun with four CPU ranks (gloo) as 2 replicas x 2 tensor-parallel ranks trains
to the losses and gradient norms of one process, and resumes exactly; layouts the model cannot split are refused
when the config is read."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from configs.training import TrainingConfig
from flows.processes import free_port
from torchrun_training import ROOT, training_config, training_records
from training.consolidated import consolidated_weights


def _config(tmp_path: Path, shards: list[str], name: str, micro_batch: int, hardware: dict) -> str:
    return training_config(tmp_path, shards, name, hardware, micro_batch_size=micro_batch, grad_accumulation=2,
                           steps=5)


@pytest.mark.slow
def test_two_replicas_of_two_tensor_parallel_ranks_train_as_one_process_and_resume_exactly(byte_shards, tmp_path):
    """The same 8 sequences per micro-batch: one process reads them all; each replica reads 4, its two ranks the
    same 4. Losses, gradient norms and the validation loss agree to float tolerance, and so do the final weights,
    read back from each run's sharded checkpoint into one plain model: a gradient wrong in a small part of the
    model (the q/k norms left out of the plan: their gains' gradients each rank's heads only) moves those weights
    by 1e-2 in 5 Adam steps while the losses differ by 1e-5. A run stopped after its checkpoint at step 2 resumes
    with the same batches and losses."""
    alone = training_records(_config(tmp_path, byte_shards, "alone", 8, {}), 1)
    split = _config(tmp_path, byte_shards, "split", 4, {"data_parallel": 2, "tensor_parallel": 2})
    first = training_records(split, 4, "--stop-after", "3")
    resumed = training_records(split, 4)
    steps = [record for record in alone if "loss" in record and "event" not in record]
    assert len(steps) == 5 and steps[-1]["loss"] < steps[0]["loss"] - 0.1                 # it trained
    straight = [record for record in first if "loss" in record and "event" not in record][:2]
    straight += [record for record in resumed if "loss" in record and "event" not in record]
    assert [record["step"] for record in straight] == [1, 2, 3, 4, 5]
    assert any(record.get("event") == "resumed" and record["step"] == 2 for record in resumed)
    for key in ("loss", "grad_norm"):
        assert [record[key] for record in straight] == pytest.approx([record[key] for record in steps], rel=1e-4)
    assert [record["batch_sequences"] for record in straight] == [16] * 5
    evaluation = [next(record["val_loss"] for record in run if record.get("event") == "eval")
                  for run in (alone, resumed)]
    assert evaluation[1] == pytest.approx(evaluation[0], rel=1e-4)
    alone_weights, split_weights = (torch.load(consolidated_weights(str(tmp_path / name / "step-000005"),
                                                                    str(tmp_path / f"{name}.pt")))
                                    for name in ("alone", "split"))
    assert alone_weights.keys() == split_weights.keys()
    for name, weight in alone_weights.items():
        assert torch.allclose(split_weights[name], weight, rtol=0, atol=2e-5), name


@pytest.mark.parametrize("model, tensor_parallel, named", [
    ({"preset": "tiny"}, 3, "model.n_heads (4), model.vocab_size (512), model.seq_len (64) not divisible by "
                            "hardware.tensor_parallel (3)"),
    ({"preset": "tiny", "n_heads": 2}, 4, "model.n_heads (2) not divisible by hardware.tensor_parallel (4)"),
    ({"preset": "124M", "vocab_size": 32001}, 2, "model.vocab_size (32001) not divisible by hardware.tensor_parallel"),
])
def test_layouts_the_model_cannot_split_evenly_are_refused_naming_the_fields(model, tensor_parallel, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        TrainingConfig.model_validate({"model": model, "hardware": {"tensor_parallel": tensor_parallel}})
    assert TrainingConfig.model_validate({"model": model}).hardware.ranks == 1


def test_the_run_has_data_parallel_times_tensor_parallel_ranks_each_replica_on_one_node_compiled_by_blocks():
    hardware = TrainingConfig.model_validate({"model": {"preset": "tiny"}, "hardware": {
        "data_parallel": 4, "tensor_parallel": 2, "nodes": 2}}).hardware
    assert hardware.ranks == 8
    with pytest.raises(ValueError, match=r"hardware.data_parallel \(1\) must be a multiple of hardware.nodes \(2\)"):
        TrainingConfig.model_validate({"model": {"preset": "tiny"}, "hardware": {"tensor_parallel": 2, "nodes": 2}})
    with pytest.raises(ValueError, match=r"hardware.compile_scope model with hardware.tensor_parallel \(2\)"):
        TrainingConfig.model_validate({"model": {"preset": "tiny"},
                                       "hardware": {"tensor_parallel": 2, "compile": True, "compile_scope": "model"}})
    assert TrainingConfig.model_validate({"model": {"preset": "tiny"},
                                          "hardware": {"tensor_parallel": 2, "compile": True}}).hardware.compile


# two ranks: gradients on the world mesh (split), on a 1 x 2 mesh (replicated, then split) and plain (replicated)
MIXED_MESHES = """
import torch
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from training.parallel import clip_gradients, init_distributed

env = init_distributed(2)
world = env.mesh["tp"]
whole = [torch.arange(1.0, 9.0), torch.arange(-4.0, 2.0).reshape(2, 3), torch.tensor([3.0, -1.0])]
grads = [distribute_tensor(whole[0], world, [Shard(0)]),
         distribute_tensor(whole[1], env.mesh["dp", "tp"], [Replicate(), Shard(1)]), whole[2].clone()]
parameters = [torch.nn.Parameter(torch.zeros_like(grad)) for grad in grads]
for parameter, grad in zip(parameters, grads):
    parameter.grad = grad
norm = clip_gradients(parameters, max_norm=1.0)
expected = torch.cat([tensor.flatten() for tensor in whole]).norm().item()
clipped = [grad.full_tensor() if hasattr(grad, "full_tensor") else grad for grad in grads]
assert abs(norm - expected) < 1e-5, (norm, expected)
assert abs(torch.cat([tensor.flatten() for tensor in clipped]).norm().item() - 1.0) < 1e-5
"""


@pytest.mark.slow
def test_the_gradient_norm_adds_gradients_on_different_meshes_each_once(tmp_path):
    """What the clip sees when a module's parameters are on another mesh than the rest: the norm of every gradient
    together (a split one counted over its shards, a replicated one once), and every gradient scaled to it."""
    script = tmp_path / "mixed.py"
    script.write_text(MIXED_MESHES)
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                           "--master-port", str(free_port()), str(script)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]        # each rank asserts
