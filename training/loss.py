"""The training loss."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def loss_function(logits: torch.Tensor, targets: torch.Tensor, z_loss: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy plus z-loss (PaLM): z_loss * mean(log Z)^2 keeps the softmax normalizer near 1."""
    logits = logits.float().flatten(0, 1)
    cross_entropy = F.cross_entropy(logits, targets.flatten())
    return cross_entropy + z_loss * torch.logsumexp(logits, dim=-1).pow(2).mean(), cross_entropy
