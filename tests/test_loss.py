"""The chunked linear cross-entropy the trainer uses (training/loss.py) is the plain loss of the whole logits:
the same loss and the same gradients, with chunk boundaries inside the batch, z-loss, μP's output multiplier and
bf16; and the whole (tokens, vocab) logits are never kept for the backward pass."""
from __future__ import annotations

import pytest
import torch

import training.loss as loss_module
from training.loss import linear_cross_entropy, loss_function
from training.model import Transformer
from training.shapes import PRESETS

VOCAB, WIDTH = 97, 16


def gradients(loss: torch.Tensor, *tensors: torch.Tensor) -> list[torch.Tensor]:
    return list(torch.autograd.grad(loss, tensors))


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(("dtype", "z_loss", "scale"), [(torch.float32, 0.0, 1.0), (torch.float32, 1e-4, 0.25),
                                                         (torch.bfloat16, 1e-4, 1.0)])
def test_the_chunked_loss_gives_the_whole_logits_loss_and_gradients(monkeypatch, dtype, z_loss, scale, compiled):
    monkeypatch.setattr(loss_module, "CHUNK_ELEMENTS", VOCAB * 7)          # 150 rows in chunks of 7: 21 and a rest
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 50, WIDTH, generator=generator).to(dtype).requires_grad_()
    weight = (torch.randn(VOCAB, WIDTH, generator=generator) * 0.5).to(dtype).requires_grad_()
    targets = torch.randint(0, VOCAB, (3, 50), generator=generator)

    expected_loss, expected_cross_entropy = loss_function((hidden @ weight.T) * scale, targets, z_loss)
    loss, cross_entropy = linear_cross_entropy(hidden, weight, targets, z_loss, scale, compiled)

    assert loss.item() == pytest.approx(expected_loss.item(), abs=2e-6)
    assert cross_entropy.item() == pytest.approx(expected_cross_entropy.item(), abs=2e-6)
    for got, want in zip(gradients(loss * 3, hidden, weight), gradients(expected_loss * 3, hidden, weight)):
        if dtype == torch.float32:
            assert torch.allclose(got, want, atol=1e-7, rtol=0), (got - want).abs().max()
        else:       # bf16: the chunks sum the weight's gradient in fp32, the factor 3 rounds apart; within an ulp
            ulp = 2 ** -7 * want.abs().max().item()      # of the largest entry
            torch.testing.assert_close(got, want, atol=ulp, rtol=2 ** -6)
    assert not cross_entropy.requires_grad


def test_the_models_training_loss_is_the_loss_of_its_logits_without_keeping_them(monkeypatch):
    monkeypatch.setattr(loss_module, "CHUNK_ELEMENTS", 512 * 16)
    torch.manual_seed(0)
    model = Transformer(PRESETS["tiny"])
    tokens = torch.randint(0, 512, (2, 65))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    expected, _ = loss_function(model(inputs), targets, 1e-4)
    kept = []
    with torch.autograd.graph.saved_tensors_hooks(lambda tensor: kept.append(tensor.numel()) or tensor, lambda t: t):
        loss, _ = model(inputs, targets, 1e-4)
    assert loss.item() == pytest.approx(expected.item(), abs=1e-6)
    assert max(kept) < inputs.numel() * 512           # nothing of (tokens, vocab) is kept for the backward pass
