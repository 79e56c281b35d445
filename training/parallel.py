"""Process group and FSDP2 sharding: gloo on CPU, nccl on GPU; each block is its own FSDP unit, then the root."""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Distributed:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed() -> Distributed:
    """Join the process group torchrun describes in the environment (a single process works without torchrun)."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device, backend = torch.device("cuda", local_rank), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        dist.init_process_group(backend, rank=rank, world_size=world, device_id=device if backend == "nccl" else None)
    return Distributed(rank, world, local_rank, device)


def shard_model(model: torch.nn.Module, device: torch.device, compute_dtype: torch.dtype | None,
                activation_checkpointing: bool = False, compile_scope: str | None = None) -> torch.nn.Module:
    """fully_shard every transformer block, then the root (embedding, final norm). Mixed precision (a 16-bit
    `compute_dtype`) keeps fp32 master weights and reduces gradients in fp32. Activation checkpointing recomputes
    each block's activations in the backward pass. `compile_scope` "blocks" compiles each block before sharding (as
    torchtitan), "model" the whole sharded model; compiling in place keeps parameter names, and so checkpoints.
    Either compiles the loss's chunk arithmetic too (training.loss)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32) if compute_dtype \
        else MixedPrecisionPolicy()
    for index, block in enumerate(model.blocks):
        if activation_checkpointing:
            block = checkpoint_wrapper(block)
        if compile_scope == "blocks":
            block.compile()
        model.blocks[index] = block
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    model.compile_loss = compile_scope is not None
    if compile_scope == "model":
        model.compile()
    return model


def all_reduce_mean(value: float | torch.Tensor, device: torch.device) -> float:
    """The mean over the ranks of a number or a one-element tensor (on the device: one wait for it, here)."""
    tensor = torch.as_tensor(value, dtype=torch.float64, device=device).reshape(1)
    dist.all_reduce(tensor, op=dist.ReduceOp.AVG if dist.get_backend() == "nccl" else dist.ReduceOp.SUM)
    return float(tensor.item()) / (1 if dist.get_backend() == "nccl" else dist.get_world_size())


def full_norm(norm) -> float:
    """A norm as a float (FSDP2 returns a DTensor)."""
    return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)


def gradient_norm(model) -> float:
    return full_norm(torch.nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None]))
