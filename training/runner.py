"""What the trainer runs its model through, chosen once when it is built (`model_runner`): the model sharded with
FSDP2 over the data-parallel ranks (`PlainRunner`), or its pipeline stages (training/pipeline_parallel.py's
`Pipeline`). Both answer the same calls, so the training step and the evaluation have no mode to branch on:

- `micro_batch(inputs, targets, accumulation, sync, last)`: one micro-batch's forward and backward passes (a
  pipeline runs its schedule's own micro-batches), its cross-entropy on the device;
- `eval_loss(inputs, targets)`: a batch's mean cross-entropy; `window_nll(inputs, targets)`: each row's summed NLL
  (the evaluation suite); `last_logits(tokens)`: the logits after a prompt (sampling);
- `module`: the parameters this rank trains and checkpoints; `stages`: the process group a gradient norm spans
  (None: this rank holds a share of every parameter)."""
from __future__ import annotations

import torch

from configs.training import TrainingConfig
from training.evaluate import model_loss
from training.exact_bpb import model_window_nll
from training.loss_scale import LossScale, NoLossScale
from training.model import Transformer
from training.parallel import Distributed, shard_model
from training.tensor_parallel import loss_context


class PlainRunner:
    def __init__(self, model: Transformer, z_loss: float, tensor_parallel: int, loss_scale: LossScale | NoLossScale):
        self.module, self.stages = model, None
        self.z_loss, self.tensor_parallel, self.loss_scale = z_loss, tensor_parallel, loss_scale
        self.eval_loss, self.window_nll = model_loss(model), model_window_nll(model)
        self.last_logits = model.last_logits

    def micro_batch(self, inputs: torch.Tensor, targets: torch.Tensor, accumulation: int, sync: bool,
                    last: bool) -> torch.Tensor:
        """Its gradients reduced over the ranks if `sync` or `last`, the gathered parameters kept until the `last`
        micro-batch of the update."""
        model = self.module
        model.set_requires_gradient_sync(sync or last)
        model.set_reshard_after_backward(last)
        # While accumulating, the gathered parameters are held between micro-batches anyway (`sluice plan` counts
        # them): keeping each block's from its forward to its backward too saves an all-gather per micro-batch
        # (1.10x tokens/s on 2 CPU ranks at 4 micro-batches, results/training.json). Evaluations' forward passes,
        # with no backward to reshard after, reshard after forward again.
        self._keep_gathered_after_forward(accumulation > 1)
        try:
            with loss_context(self.tensor_parallel):
                loss, cross_entropy = model(inputs, targets, self.z_loss)
                self.loss_scale.scaled(loss / accumulation).backward()
        finally:
            self._keep_gathered_after_forward(False)
        return cross_entropy.detach()

    def _keep_gathered_after_forward(self, keep: bool) -> None:
        for block in self.module.blocks.children():     # not the root, which never reshards after forward
            block.set_reshard_after_forward(not keep, recurse=False)


def model_runner(model: Transformer, env: Distributed, config: TrainingConfig, compute_dtype: torch.dtype | None,
                 loss_scale: LossScale | NoLossScale):
    """The pipeline when the run has pipeline stages, else the plain runner; the model sharded either way."""
    hardware = config.hardware
    if env.pipeline_parallel > 1:
        # imported here: torch's pipelining imports dynamo, a second of every rank's start-up
        from training.pipeline_parallel import Pipeline
        return Pipeline(model, env, hardware, config.optimizer.z_loss, compute_dtype, loss_scale,
                        config.micro_batch_size)
    sharded = shard_model(model, env.device, compute_dtype,      # on CPU too
                          activation_checkpointing=hardware.activation_checkpointing,
                          compile_scope=hardware.compile_scope if hardware.compile else None, mesh=env.mesh["dp"])
    return PlainRunner(sharded, config.optimizer.z_loss, env.tensor_parallel, loss_scale)
