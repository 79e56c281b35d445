"""Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) with sequence parallelism on the norms (Korthikanti et al.
2022), as torchtitan applies it with DTensor's `parallelize_module`, before FSDP2 shards over the data-parallel
ranks (training/parallel.py).

Within a block, q, k, v and the MLP's gate and up are split by output rows (colwise: each rank has whole heads and a
slice of the hidden units), `out` and `down` by input columns (rowwise: the ranks' partial sums are reduce-scattered
along the sequence). Between them the residual stream stays split along the sequence, so the norms run on each
rank's tokens (SequenceParallel) and attention and the MLP all-gather their input. The q/k norms act on each rank's
own heads: they are in the plan as split along the head dimension, so that their gains' gradients are summed over
the ranks' heads (left out, each rank would keep only its own heads' part, and their gradients would sit on another
mesh than the rest).

The embedding is split by vocabulary rows, and so is the output projection (tied, or untied): the logits stay split by
vocabulary and the loss is torch's `loss_parallel` of them (its softmax reduced over the ranks' slices) instead of
training/loss.py's chunked one, whose custom backward does not run on DTensors; each rank's logits are 1 /
tensor_parallel of the whole, which is what the chunking saved on one rank."""
from __future__ import annotations

import contextlib

from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                               SequenceParallel, loss_parallel, parallelize_module)

from training.model import Transformer

HEADS_DIM = 2           # q and k are (batch, time, heads, head_dim) when normed


def parallelize(model: Transformer, mesh: DeviceMesh) -> Transformer:
    """Split `model` in place over the tensor-parallel `mesh` (its `tp` dimension)."""
    parallelize_module(model, mesh, {
        "embedding": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "final_norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1), use_local_output=False),
    })
    if model.config.tie_embeddings:                 # tied again: each was made a DTensor parameter of its own
        model.output.weight = model.embedding.weight
    for block in model.blocks:
        parallelize_module(block, mesh, {
            "attention_norm": SequenceParallel(),
            "attention": PrepareModuleInput(input_layouts=(Shard(1), None, None),      # x, cos, sin
                                            desired_input_layouts=(Replicate(), None, None)),
            "attention.q": ColwiseParallel(),
            "attention.k": ColwiseParallel(),
            "attention.v": ColwiseParallel(),
            "attention.q_norm": SequenceParallel(sequence_dim=HEADS_DIM, use_local_output=True),
            "attention.k_norm": SequenceParallel(sequence_dim=HEADS_DIM, use_local_output=True),
            "attention.out": RowwiseParallel(output_layouts=Shard(1)),
            "mlp_norm": SequenceParallel(),
            "mlp": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "mlp.gate": ColwiseParallel(),
            "mlp.up": ColwiseParallel(),
            "mlp.down": RowwiseParallel(output_layouts=Shard(1)),
        })
    model.tensor_parallel = mesh.size()
    return model


def loss_context(tensor_parallel: int):
    """What the forward and backward passes of a training step run in: loss_parallel under tensor parallelism."""
    return loss_parallel() if tensor_parallel > 1 else contextlib.nullcontext()
