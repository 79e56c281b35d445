"""Evaluation on the validation shards: mean loss, bits per byte, and sampled continuations of fixed prompts."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from training.model import generate
from training.parallel import all_reduce_mean
from training.sequences import TokenSequences


@torch.no_grad()
def validation_loss(batch_loss: Callable[[torch.Tensor, torch.Tensor], float], shards: list[str], seq_len: int,
                    batch_size: int, batches: int, rank: int, world_size: int, device: torch.device) -> float:
    """Mean cross-entropy (nats per token) over the same `batches` micro-batches at every evaluation, each one's
    from `batch_loss(inputs, targets)` (`model_loss`, or a pipeline's)."""
    reader = TokenSequences(shards, seq_len, seed=0, rank=rank, world_size=world_size)
    total = 0.0
    for _ in range(batches):
        inputs, targets = (torch.from_numpy(array).to(device) for array in reader.next_batch(batch_size))
        total += batch_loss(inputs, targets)
    return all_reduce_mean(total / batches, device)


def model_loss(model) -> Callable[[torch.Tensor, torch.Tensor], float]:
    """A batch's mean cross-entropy from the model's logits."""
    return lambda inputs, targets: F.cross_entropy(model(inputs).float().flatten(0, 1), targets.flatten()).item()


def bits_per_byte(loss: float, bytes_per_token: float | None) -> float | None:
    """Nats per token -> bits per UTF-8 byte, comparable across tokenizers."""
    return loss / math.log(2) / bytes_per_token if bytes_per_token else None


@torch.no_grad()
def sample_continuations(last_logits: Callable[[torch.Tensor], torch.Tensor], seq_len: int, tokenizer_path: str,
                         prompts: list[str], new_tokens: int, device: torch.device) -> str:
    """Greedy continuations of the prompts, as text, from `last_logits` (a model's, or a pipeline's: every rank must
    call this, the model is sharded)."""
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=tokenizer_path)
    lines = []
    for prompt in prompts:
        ids = torch.tensor([processor.encode(prompt)], device=device)
        out = generate(last_logits, ids, new_tokens, seq_len, temperature=0)
        lines.append(f"{prompt!r} -> {processor.decode(out[0].tolist())!r}")
    return "\n".join(lines)
