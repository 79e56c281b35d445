"""Process group, device mesh and FSDP2 sharding: gloo on CPU, nccl on GPU; the ranks form one DeviceMesh of
pipeline x data x tensor parallel ranks, tensor parallel innermost (a replica's ranks are neighbours, on one node)
and pipeline stages outermost; each block is its own FSDP unit over the data-parallel dimension, then the root."""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import DTensor

MESH_DIMS = ("pp", "dp", "tp")


@dataclass(frozen=True)
class Distributed:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    mesh: DeviceMesh

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def data_rank(self) -> int:
        """This rank's replica: the tensor-parallel ranks of one replica read the same batches."""
        return self.mesh["dp"].get_local_rank()

    @property
    def data_ranks(self) -> int:
        return self.mesh["dp"].size()

    @property
    def tensor_parallel(self) -> int:
        return self.mesh["tp"].size()

    @property
    def pipeline_parallel(self) -> int:
        return self.mesh["pp"].size()

    @property
    def layout(self) -> dict:
        """The ranks per dimension, as a checkpoint records them."""
        return {"pipeline_parallel": self.pipeline_parallel, "data_parallel": self.data_ranks,
                "tensor_parallel": self.tensor_parallel}


def init_distributed(tensor_parallel: int = 1, pipeline_parallel: int = 1, store=None) -> Distributed:
    """Join the process group torchrun describes in the environment (a single process works without torchrun), its
    ranks laid out as `pipeline_parallel` stages, each of world / (pipeline_parallel x tensor_parallel) replicas of
    `tensor_parallel` ranks. `store`: where the group meets instead of torchrun's address (a job of a warm
    trainer, training/jobs.py)."""
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
        dist.init_process_group(backend, rank=rank, world_size=world, store=store,
                                device_id=device if backend == "nccl" else None)
    if world % (tensor_parallel * pipeline_parallel):
        raise ValueError(f"{world} ranks cannot form hardware.pipeline_parallel ({pipeline_parallel}) stages of "
                         f"replicas of hardware.tensor_parallel ({tensor_parallel}) ranks: start pipeline_parallel x "
                         f"data_parallel x tensor_parallel ranks")
    mesh = init_device_mesh(device.type, (pipeline_parallel, world // tensor_parallel // pipeline_parallel,
                                          tensor_parallel), mesh_dim_names=MESH_DIMS)
    return Distributed(rank, world, local_rank, device, mesh)


def shard_model(model: torch.nn.Module, device: torch.device, compute_dtype: torch.dtype | None,
                activation_checkpointing: bool = False, compile_scope: str | None = None,
                mesh: DeviceMesh | None = None, reshard_after_forward: bool = True) -> torch.nn.Module:
    """fully_shard every transformer block, then the root (embedding, final norm), over `mesh` (the data-parallel
    ranks; default: all). Mixed precision (a 16-bit `compute_dtype`) keeps fp32 master weights and reduces
    gradients in fp32. Activation checkpointing recomputes each block's activations in the backward pass.
    `compile_scope` "blocks" compiles each block before sharding (as torchtitan; a tensor-parallel block its
    attention and MLP: `compile_tensor_parallel_block`), "model" the whole sharded model;
    compiling in place keeps parameter names, and so checkpoints. Either compiles the loss's chunk arithmetic too
    (training.loss). `reshard_after_forward` False keeps the gathered parameters from the forward pass to the
    backward (pipeline stages: training/pipeline_parallel.py)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32) if compute_dtype \
        else MixedPrecisionPolicy()
    for name, block in list(model.blocks.named_children()):       # a list, or a pipeline stage's dict
        tensor_parallel = isinstance(next(block.parameters()), DTensor)       # split by training/tensor_parallel.py
        if compile_scope == "blocks" and tensor_parallel:
            compile_tensor_parallel_block(block)
        if activation_checkpointing:
            block = checkpoint_wrapper(block)
        if compile_scope == "blocks" and not tensor_parallel:
            block.compile()
        setattr(model.blocks, name, block)
        fully_shard(block, mesh=mesh, mp_policy=policy, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh, mp_policy=policy, reshard_after_forward=reshard_after_forward)
    model.compile_loss = compile_scope is not None
    if compile_scope == "model":
        model.compile()
    return model


def compile_tensor_parallel_block(block: torch.nn.Module) -> None:
    """A tensor-parallel block's attention and MLP compiled as functions, their input layouts (the plan's
    PrepareModuleInput hooks) left outside: compiled whole, a block traces those hooks, and the compiled MLP's input
    gradient lost the other ranks' partial sums (torch 2.13, gloo: every gradient before it wrong), while each part
    compiled alone gives one process's gradients. The norms and the residual adds stay eager."""
    for part in (block.attention, block.mlp):
        part.forward = torch.compile(part.forward)


def all_reduce_mean(value: float | torch.Tensor, device: torch.device) -> float:
    """The mean over the ranks of a number or a one-element tensor (on the device: one wait for it, here)."""
    tensor = torch.as_tensor(value, dtype=torch.float64, device=device).reshape(1)
    dist.all_reduce(tensor, op=dist.ReduceOp.AVG if dist.get_backend() == "nccl" else dist.ReduceOp.SUM)
    return float(tensor.item()) / (1 if dist.get_backend() == "nccl" else dist.get_world_size())


def gradient_norm(parameters, stages: dist.ProcessGroup | None = None) -> torch.Tensor:
    """The 2-norm of the parameters' gradients together, a plain tensor the same on every rank. The gradients are
    DTensors, on the data-parallel mesh or, under tensor parallelism, on the data x tensor mesh (and on both if a
    module were left out of the tensor-parallel plan): each mesh's norm is reduced over its own ranks, then the
    meshes' norms are added in square. DTensor reduces a sharded gradient's norm over its shards and takes a
    replicated one's once. Under pipeline parallelism each rank has its stages' gradients only: the squares are
    summed over the pipeline's ranks, `stages`, too."""
    by_mesh = defaultdict(list)
    for parameter in parameters:
        if parameter.grad is not None:
            grad = parameter.grad
            by_mesh[grad.device_mesh if isinstance(grad, DTensor) else None].append(grad)
    squares = [_plain(torch.nn.utils.get_total_norm(grads)).float() ** 2 for grads in by_mesh.values()]
    square = torch.stack(squares).sum() if squares else torch.zeros(())
    if stages is not None:
        dist.all_reduce(square, group=stages)
    return square.sqrt()


def clip_gradients(parameters, max_norm: float, stages: dist.ProcessGroup | None = None) -> float:
    """Scale the gradients to a global norm of at most `max_norm` (over the pipeline's ranks `stages` too); the
    norm before, as a float (the host waits)."""
    parameters = list(parameters)
    norm = gradient_norm(parameters, stages)
    factor = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    for parameter in parameters:
        if parameter.grad is not None:          # each rank scales its own shard of the gradient
            _local(parameter.grad).mul_(factor.to(parameter.grad.dtype))
    return float(norm)


def _plain(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor


def _local(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to_local() if isinstance(tensor, DTensor) else tensor
