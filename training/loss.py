"""The training loss: cross-entropy plus z-loss (PaLM: z_loss * mean(log Z)^2 keeps the softmax normalizer near 1).

`loss_function` is the loss of given logits. `linear_cross_entropy` is the same loss of the output projection
`hidden @ weight.T * scale`, computed in chunks of rows so that the (tokens, vocab) logits never exist whole: on a
GPU their fp32 copies (the cast, log-softmax, its gradient) were most of a 124M run's memory (results/gpu.json:
91 GB peak where the model's own state and activations planned 22 GB). Each chunk's logits, softmax and gradients
are made and dropped within the forward pass, which keeps the gradients of the hidden states and the weight for
the backward pass (as Liger's fused linear cross-entropy does); the matmuls are those of the unfused backward.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

CHUNK_ELEMENTS = 2 ** 28        # logits per chunk: 1 GiB in fp32


def loss_function(logits: torch.Tensor, targets: torch.Tensor, z_loss: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, cross-entropy) of logits (batch, time, vocab) against targets (batch, time)."""
    logits = logits.float().flatten(0, 1)
    cross_entropy = F.cross_entropy(logits, targets.flatten())
    return cross_entropy + z_loss * torch.logsumexp(logits, dim=-1).pow(2).mean(), cross_entropy


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, z_loss: float,
                         scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """`loss_function(hidden @ weight.T * scale, targets, z_loss)` for hidden (batch, time, width) and weight
    (vocab, width), without the whole logits. Only the loss is differentiable; the cross-entropy is for reading."""
    return _LinearCrossEntropy.apply(hidden, weight, targets, z_loss, scale)


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, z_loss, scale):
        rows, targets = hidden.flatten(0, 1), targets.flatten()
        count = rows.shape[0]
        chunk = max(1, CHUNK_ELEMENTS // weight.shape[0])
        grad_rows = torch.empty_like(rows)
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
        cross_entropy = torch.zeros((), dtype=torch.float32, device=rows.device)
        z_term = torch.zeros((), dtype=torch.float32, device=rows.device)
        for start in range(0, count, chunk):
            part, wanted = rows[start:start + chunk], targets[start:start + chunk]
            logits = (part @ weight.T).float() * scale
            log_z = torch.logsumexp(logits, dim=-1)
            cross_entropy += (log_z - logits.gather(1, wanted[:, None]).squeeze(1)).sum()
            z_term += log_z.pow(2).sum()
            # d loss / d logits = softmax * (1 + 2 z log Z) - onehot(target), over the count of rows, times scale
            gradient = (logits - log_z[:, None]).exp_().mul_((1 + 2 * z_loss * log_z)[:, None])
            gradient[torch.arange(len(wanted), device=wanted.device), wanted] -= 1
            gradient = gradient.mul_(scale / count).to(part.dtype)
            grad_rows[start:start + chunk] = gradient @ weight
            grad_weight += (gradient.T @ part).float()
        ctx.save_for_backward(grad_rows.view_as(hidden), grad_weight.to(weight.dtype))
        cross_entropy /= count
        ctx.mark_non_differentiable(cross_entropy)
        return cross_entropy + z_loss * z_term / count, cross_entropy

    @staticmethod
    def backward(ctx, grad_loss, _grad_cross_entropy):
        grad_hidden, grad_weight = ctx.saved_tensors
        return grad_hidden * grad_loss, grad_weight * grad_loss, None, None, None
