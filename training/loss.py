"""The training loss: cross-entropy plus z-loss (PaLM: z_loss * mean(log Z)^2 keeps the softmax normalizer near 1).

`loss_function` is the loss of given logits. `linear_cross_entropy` is the same loss of the output projection
`hidden @ weight.T * scale`, computed in chunks of rows so that the (tokens, vocab) logits never exist whole: on a
GPU their fp32 copies (the cast, log-softmax, its gradient) were most of a 124M run's memory (results/gpu.json:
91 GB peak where the model's own state and activations planned 22 GB). Each chunk's logits, softmax and gradients
are made and dropped within the forward pass, which keeps the gradients of the hidden states and the weight for
the backward pass (as Liger's fused linear cross-entropy does); the matmuls are those of the unfused backward.
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from training.shapes import CHUNK_ELEMENTS


def loss_function(logits: torch.Tensor, targets: torch.Tensor, z_loss: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, cross-entropy) of logits (batch, time, vocab) against targets (batch, time)."""
    logits = logits.float().flatten(0, 1)
    cross_entropy = F.cross_entropy(logits, targets.flatten())
    return cross_entropy + z_loss * torch.logsumexp(logits, dim=-1).pow(2).mean(), cross_entropy


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, z_loss: float,
                         scale: float = 1.0, compiled: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """`loss_function(hidden @ weight.T * scale, targets, z_loss)` for hidden (batch, time, width) and weight
    (vocab, width), without the whole logits. Only the loss is differentiable; the cross-entropy is for reading.
    `compiled` fuses each chunk's element-wise arithmetic (torch.compile): left eager, it was 40% of a 124M step's
    device time on an H200 (results/gpu.json, the profile)."""
    return _LinearCrossEntropy.apply(hidden, weight, targets, z_loss, scale, compiled)


def chunk_terms(logits: torch.Tensor, targets: torch.Tensor, z_loss: float, scale: float,
                count: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For one chunk's logits (rows, vocab, unscaled): the gradient of the loss with respect to them (in their
    dtype), and the chunk's sums of cross-entropy and of log Z squared."""
    scaled = logits.float() * scale
    log_z = torch.logsumexp(scaled, dim=-1)
    cross_entropy = (log_z - scaled.gather(1, targets[:, None]).squeeze(1)).sum()
    # d loss / d logits = (softmax * (1 + 2 z log Z) - onehot(target)) * scale / rows, in place: eager, a chunk
    # holds its logits, their fp32 copy, this gradient and its cast (`sluice plan` counts them)
    gradient = (scaled - log_z[:, None]).exp_().mul_((1 + 2 * z_loss * log_z)[:, None])
    gradient[torch.arange(len(targets), device=targets.device), targets] -= 1
    return gradient.mul_(scale / count).to(logits.dtype), cross_entropy, log_z.pow(2).sum()


@functools.cache
def compiled_chunk_terms():
    """`chunk_terms` compiled (at its first call). Made on first use: torch.compile imports dynamo and inductor,
    3 s of every rank's start-up that an eager run never needs."""
    return torch.compile(chunk_terms, dynamic=False)


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, z_loss, scale, compiled):
        rows, targets = hidden.flatten(0, 1), targets.flatten()
        count = rows.shape[0]
        chunk = max(1, CHUNK_ELEMENTS // weight.shape[0])
        terms = compiled_chunk_terms() if compiled else chunk_terms
        grad_rows = torch.empty_like(rows)
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
        cross_entropy = torch.zeros((), dtype=torch.float32, device=rows.device)
        z_term = torch.zeros((), dtype=torch.float32, device=rows.device)
        for start in range(0, count, chunk):
            part = rows[start:start + chunk]
            gradient, chunk_cross_entropy, chunk_z = terms(part @ weight.T, targets[start:start + chunk], z_loss,
                                                           scale, count)
            cross_entropy += chunk_cross_entropy
            z_term += chunk_z
            grad_rows[start:start + chunk] = gradient @ weight
            grad_weight += (gradient.T @ part).float()
        ctx.save_for_backward(grad_rows.view_as(hidden), grad_weight.to(weight.dtype))
        cross_entropy /= count
        ctx.mark_non_differentiable(cross_entropy)
        return cross_entropy + z_loss * z_term / count, cross_entropy

    @staticmethod
    def backward(ctx, grad_loss, _grad_cross_entropy):
        grad_hidden, grad_weight = ctx.saved_tensors
        return grad_hidden * grad_loss, grad_weight * grad_loss, None, None, None, None
