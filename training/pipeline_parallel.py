"""Pipeline parallelism (GPipe, Huang et al. 2019; 1F1B, Narayanan et al. 2021; zero bubble, Qi et al. 2024) with
torch.distributed.pipelining: the model's layers split evenly into stages (the embedding on the first, the final
norm, output projection and loss on the last; neither counted in the balance), each stage's module sharded with FSDP2
over the data-parallel ranks, and a schedule that runs each micro_batch_size batch as `hardware.microbatches`
micro-batches through them.

The stages keep their gathered parameters from a micro-batch's forward pass to the update (FSDP2's
reshard_after_forward False, as torchtitan shards pipeline stages): the zero-bubble schedule's weight pass
differentiates with respect to the parameters the forward pass used, and with them resharded in between it gave other
gradients than one process (grad norm 1.71 against 2.43 at pp 2 x dp 2). The other schedules lose nothing by it: the
stage keeps its parameters gathered after its first backward pass anyway (until the update's last), so the peak is
the same, and each micro-batch's forward pass no longer gathers them again.

A stage keeps the whole model's parameter names (`blocks.<layer>...`), so its checkpoint (DCP, per stage) reads
back into one plain model. Every rank builds the whole model from the same seed before keeping its stages, so the
weights are those of one process. The last stage's loss is the cross-entropy (plus z-loss) of plain logits
(training/loss.py's loss_function; the chunked loss needs the output weight outside the stage's forward), divided
by the micro-batches and the update's accumulated batches (each runs the schedule once, and FSDP adds its reduced
gradients to the update's); the update's cross-entropy is broadcast from the rank holding the last stage, so every
rank logs and guards against spikes with the same number."""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B,
                                         ScheduleInterleavedZeroBubble)
from torch.distributed.tensor import DTensor

from configs.training import INTERLEAVED, HardwareSpec
from training.exact_bpb import window_nll
from training.loss import loss_function
from training.loss_scale import LossScale, NoLossScale
from training.model import Transformer, readout
from training.parallel import Distributed, shard_model
from training.tensor_parallel import loss_context

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B, "interleaved_1f1b": ScheduleInterleaved1F1B,
             "zero_bubble": ScheduleInterleavedZeroBubble}


class StageModule(nn.Module):
    """Some layers of a Transformer under their own names, with the embedding when `first` and the final norm and
    output projection when `last`. A rank running two stages holds one more of these over both stages' parts:
    the module its optimizer and checkpoint see (its forward is not run)."""

    def __init__(self, model: Transformer, layers: list[int], first: bool, last: bool):
        super().__init__()
        self.config = model.config
        self.embedding = model.embedding if first else None
        self.blocks = nn.ModuleDict({str(layer): model.blocks[layer] for layer in layers})
        self.final_norm = model.final_norm if last else None
        self.output = model.output if last else None
        self.register_buffer("rope_cos", model.rope_cos, persistent=False)
        self.register_buffer("rope_sin", model.rope_sin, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Tokens (first stage) or hidden states in; hidden states, or logits (last stage), out."""
        if self.embedding is not None:
            x = self.embedding(x)
        for block in self.blocks.values():
            x = block(x, self.rope_cos, self.rope_sin)
        return x if self.output is None else readout(self.output, self.final_norm(x), self.config)


def stage_indices(rank: int, ranks: int, schedule: str) -> list[int]:
    """The stages a pipeline rank runs: its own; under the interleaved schedules also one a loop further."""
    return [rank, rank + ranks] if schedule in INTERLEAVED else [rank]


class PipelineLoss:
    """The schedule's loss_fn: each micro-batch's training loss (times fp16's loss scale: the backward pass starts
    from it), its cross-entropy kept for the log; or, while `reader` is set (forward passes that read the logits:
    the evaluation suite, sampling), what `reader` returns."""

    def __init__(self, z_loss: float, loss_scale: LossScale | NoLossScale):
        self.z_loss, self.loss_scale, self.cross_entropies = z_loss, loss_scale, []
        self.divisor = 1        # micro-batches x accumulated batches of the update: their gradients add up to its mean
        self.reader: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None

    def __call__(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.reader is not None:
            return self.reader(logits, targets)
        loss, cross_entropy = (_local(value) for value in loss_function(logits, targets, self.z_loss))
        self.cross_entropies.append(cross_entropy.detach())
        return self.loss_scale.scaled(loss / self.divisor)


def _local(value: torch.Tensor) -> torch.Tensor:
    """A loss of tensor-parallel logits is a replicated DTensor: every rank's own copy."""
    return value.to_local() if isinstance(value, DTensor) else value


class Pipeline:
    """This rank's stages of the model, sharded over the data-parallel ranks, and the schedule that runs them: a
    runner of training/runner.py. `module` holds every parameter this rank trains (for the optimizer, the gradient
    clip and the checkpoint), `stages` is the pipeline's process group."""

    def __init__(self, model: Transformer, env: Distributed, hardware: HardwareSpec, z_loss: float,
                 compute_dtype: torch.dtype | None, loss_scale: LossScale | NoLossScale, micro_batch_size: int):
        mesh = env.mesh["pp"]
        self.stages, rank, ranks = mesh.get_group(), mesh.get_local_rank(), mesh.size()
        stages = hardware.pipeline_stages
        per_stage = model.config.n_layers // stages
        indices = stage_indices(rank, ranks, hardware.pipeline_schedule)
        layers = {index: list(range(index * per_stage, (index + 1) * per_stage)) for index in indices}
        modules = [StageModule(model, layers[index], index == 0, index == stages - 1) for index in indices]
        for module in modules:
            shard_model(module, env.device, compute_dtype, hardware.activation_checkpointing,
                        compile_scope=hardware.compile_scope if hardware.compile else None, mesh=env.mesh["dp"],
                        reshard_after_forward=False)
        self.first, self.last = 0 in indices, stages - 1 in indices
        self.module = modules[0] if len(modules) == 1 else \
            StageModule(model, sum(layers.values(), []), self.first, self.last)
        self.last_rank = ranks - 1          # the last stage's, under each schedule
        pipeline_stages = [PipelineStage(module, index, stages, env.device, group=self.stages)
                           for module, index in zip(modules, indices)]
        self.loss = PipelineLoss(z_loss, loss_scale)
        schedule = SCHEDULES[hardware.pipeline_schedule]
        # scale_grads off: the schedule would divide every gradient by the micro-batches after each step, the ones
        # accumulated from the update's earlier steps too; the loss is divided instead (PipelineLoss.divisor)
        self.schedule = schedule(pipeline_stages if len(pipeline_stages) > 1 else pipeline_stages[0],
                                 n_microbatches=hardware.pipeline_microbatches, loss_fn=self.loss, scale_grads=False)
        self.device, self.microbatches = env.device, hardware.pipeline_microbatches
        self.tensor_parallel, self.vocab_size = env.tensor_parallel, model.config.vocab_size
        self.batch_shape = (micro_batch_size, model.config.seq_len)

    def micro_batch(self, inputs: torch.Tensor, targets: torch.Tensor, accumulation: int, sync: bool,
                    last: bool) -> torch.Tensor:
        """Forward and backward passes of one batch's micro-batches, their gradients reduced over the replicas and
        added to the update's (the mean over the update's `accumulation` batches of the micro-batches' mean): their
        mean cross-entropy, the same on every rank of the pipeline. The schedule reduces the gradients at its end
        whatever `sync` and `last` say."""
        self.loss.divisor = self.microbatches * accumulation
        self._run(self.schedule.step, inputs, targets)
        return self._mean_cross_entropy()

    @torch.no_grad()
    def eval_loss(self, inputs: torch.Tensor, targets: torch.Tensor) -> float:
        """One batch's mean cross-entropy, forward passes only, the same on every rank of the pipeline."""
        self._run(self.schedule.eval, inputs, targets)
        return float(self._mean_cross_entropy())

    @torch.no_grad()
    def window_nll(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Each row's summed NLL (training/exact_bpb.py's suite), the same on every rank of the pipeline."""
        rows = self._read(window_nll, inputs, targets)
        return self._from_last_stage(torch.cat(rows) if self.last else None, (inputs.shape[0],), torch.float64)

    @torch.no_grad()
    def last_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """The logits (1, vocab) after the last of tokens (1, time), time up to seq_len (sampling), the same on every
        rank of the pipeline. The schedule's stages pass on batches of the training's shape (micro-batch, seq_len)
        only, so the tokens are the first row of one, right-padded: attention is causal, so the padding changes none
        of their logits."""
        batch = torch.zeros(self.batch_shape, dtype=torch.long, device=self.device)
        batch[0, :tokens.shape[1]] = tokens[0]
        position = tokens.shape[1] - 1
        read = self._read(lambda logits, _: logits[:1, position].float(), batch, batch)   # the batch's first row
        return self._from_last_stage(read[0] if self.last else None, (1, self.vocab_size), torch.float32)

    def _read(self, reader: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], inputs: torch.Tensor,
              targets: torch.Tensor) -> list[torch.Tensor]:
        """Forward passes only, the last stage handing each micro-batch's whole logits to `reader`: what it returned
        for this batch's micro-batches (on the other stages, nothing)."""
        read = []

        def keep(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            read.append(reader(logits.full_tensor() if isinstance(logits, DTensor) else logits, targets))
            return torch.zeros((), device=self.device)

        self.loss.reader = keep
        try:
            self._run(self.schedule.eval, inputs, targets)
        finally:
            self.loss.reader = None
        return read[-self.microbatches:]

    def _from_last_stage(self, value: torch.Tensor | None, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """`value` of the rank holding the last stage, on every rank of the pipeline."""
        value = value if value is not None else torch.zeros(shape, dtype=dtype, device=self.device)
        dist.broadcast(value, group=self.stages, group_src=self.last_rank)
        return value

    def _run(self, run, inputs: torch.Tensor, targets: torch.Tensor) -> None:
        self.loss.cross_entropies = []
        with loss_context(self.tensor_parallel):
            run(*((inputs,) if self.first else ()), **({"target": targets} if self.last else {}))

    def _mean_cross_entropy(self) -> torch.Tensor:
        """Of the batch's micro-batches: the last ones the loss saw (the schedule's set-up, at the first step and
        the first after an evaluation, calls it once more before them, inferring shapes)."""
        return self._from_last_stage(torch.stack(self.loss.cross_entropies[-self.microbatches:]).mean()
                                     if self.last else None, (), torch.float32)
