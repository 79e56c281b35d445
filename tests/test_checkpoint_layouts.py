"""A checkpoint resumes under another layout, for real: one run of 10 steps passes through five layouts (4 replicas;
2 pipeline stages x 2 replicas; 2 stages x 2 tensor-parallel ranks; 2 replicas x 2 tensor-parallel ranks, compiled;
one process), each resuming the checkpoint the one before saved, and trains to the losses and weights of one process
that ran straight through. The compiled tensor-parallel leg is the check on compile_tensor_parallel_block: compiled
whole, those blocks gave other gradient norms from the first step.

The straight run and the four legs of 4 ranks run one after another in one torchrun of 4 ranks (tests/
torchrun_training.py, `training_runs`: each with its own process group and a Trainer built from its config, so each
leg resumes from the checkpoint on disk, as a torchrun of its own would), the compiled leg last (no run after it
meets what compiling left in the ranks); the one-process leg is a torchrun of its own. The ranks import torch and
the trainer twice, not six times."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from torchrun_training import run, training_config, training_records, training_runs
from training.consolidated import consolidated_weights

SEQUENCES = 8           # per update, in every layout
STEPS = 10
LAYOUTS = [             # (ranks, hardware, steps it trains to), in the relay's order
    (4, {"data_parallel": 4}, 2),
    (4, {"pipeline_parallel": 2, "data_parallel": 2, "microbatches": 2}, 4),
    (4, {"pipeline_parallel": 2, "tensor_parallel": 2, "microbatches": 2}, 6),
    (4, {"data_parallel": 2, "tensor_parallel": 2, "compile": True}, 8),
    (1, {}, 10),
]


def _config(tmp_path: Path, shards: list[str], name: str, hardware: dict, checkpoints: Path) -> str:
    replicas = hardware.get("data_parallel", 1)
    return training_config(tmp_path, shards, name, hardware, micro_batch_size=SEQUENCES // replicas, steps=STEPS,
                           model={"preset": "tiny", "tie_embeddings": False},
                           checkpoint={"dir": str(checkpoints), "every": 2})


def _steps(records: list[dict]) -> list[dict]:
    return [record for record in records if "loss" in record and "event" not in record]


@pytest.mark.slow
def test_a_run_resumed_under_each_other_layout_trains_as_one_process(byte_shards, tmp_path):
    """Every layout reads the same 8 sequences an update (the data position is dealt out anew to its replicas),
    reshards the model and the optimizer's moments from the checkpoint by parameter name, and so gives the straight
    run's losses, its validation loss and, read back from the last checkpoint into one plain model, its weights."""
    legs = [_config(tmp_path, byte_shards, f"layout-{index}", hardware, tmp_path / "relay")
            for index, (_, hardware, _) in enumerate(LAYOUTS)]
    *together, (alone_ranks, _, _) = LAYOUTS
    assert alone_ranks == 1 and all(ranks == 4 for ranks, _, _ in together)
    trained = training_runs({"straight": run(_config(tmp_path, byte_shards, "straight", {}, tmp_path / "straight"),
                                             ranks=1)}
                            | {f"layout-{index}": run(legs[index], stop_after=stop)
                               for index, (_, _, stop) in enumerate(together)}, 4)
    straight = trained["straight"]
    runs = [trained[f"layout-{index}"] for index in range(len(together))] + [training_records(legs[-1], 1)]
    relayed = [record for records in runs for record in _steps(records)]
    layouts = [record.get("resharded_from") for records in runs for record in records
               if record.get("event") == "resumed"]
    assert _steps(straight)[-1]["loss"] < _steps(straight)[0]["loss"] - 0.1                # it trained
    assert [record["step"] for record in relayed] == list(range(1, STEPS + 1))
    assert layouts == [{"pipeline_parallel": 1, "data_parallel": 4, "tensor_parallel": 1},
                       {"pipeline_parallel": 2, "data_parallel": 2, "tensor_parallel": 1},
                       {"pipeline_parallel": 2, "data_parallel": 1, "tensor_parallel": 2},
                       {"pipeline_parallel": 1, "data_parallel": 2, "tensor_parallel": 2}]
    for key in ("loss", "grad_norm"):
        assert [record[key] for record in relayed] == pytest.approx([record[key] for record in _steps(straight)],
                                                                     rel=1e-4)
    evaluations = [next(record["val_loss"] for record in records if record.get("event") == "eval")
                   for records in (straight, runs[-1])]
    assert evaluations[1] == pytest.approx(evaluations[0], rel=1e-4)
    weights = [torch.load(consolidated_weights(str(tmp_path / name / f"step-{STEPS:06d}"), str(tmp_path / f"{name}.pt")))
               for name in ("straight", "relay")]
    assert weights[0].keys() == weights[1].keys()
    for name, weight in weights[0].items():
        assert torch.allclose(weights[1][name], weight, rtol=0, atol=5e-5), name
