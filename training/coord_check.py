"""μP's coordinate check (Yang et al. 2022, appendix D.4): train the same model at several widths for a few Adam
steps on the same batch and record the typical size of each layer's output coordinates (mean |x|). Under μP the
sizes stay flat across widths; under standard parametrization they grow with width once the model has been
updated (the logits first), which is why a learning rate tuned on a small model does not transfer."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from configs.training import OptimizerSpec
from training.model import Transformer
from training.optim import build_optimizer
from training.shapes import ModelConfig


def _recorded_layers(model: Transformer) -> dict[str, torch.nn.Module]:
    layers = {"embedding": model.embedding}
    layers |= {f"block {index}": block for index, block in enumerate(model.blocks)}
    return layers


def coordinate_sizes(config: ModelConfig, widths: list[int], steps: int = 4, lr: float = 1e-2,
                     batch: int = 8, seed: int = 0) -> dict[int, dict[str, float]]:
    """width -> layer -> mean |coordinate| of its output after `steps` Adam updates (no warmup, no decay), the
    logits included; the same tokens at every width."""
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, config.vocab_size, (batch, config.seq_len + 1), generator=generator)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    sizes = {}
    for width in widths:
        torch.manual_seed(seed)
        model = Transformer(replace(config, d_model=width))
        optimizer = build_optimizer(model, OptimizerSpec(lr=lr, weight_decay=0.0))     # μP's scales included
        for _ in range(steps):
            loss = torch.nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        seen: dict[str, float] = {}
        hooks = [layer.register_forward_hook(lambda _, __, output, name=name: seen.__setitem__(
                     name, output.detach().abs().mean().item())) for name, layer in _recorded_layers(model).items()]
        with torch.no_grad():
            seen["logits"] = model(inputs).abs().mean().item()
        for hook in hooks:
            hook.remove()
        sizes[width] = seen
    return sizes


def width_slopes(sizes: dict[int, dict[str, float]]) -> dict[str, float]:
    """Per layer, the slope of log(size) against log(width): 0 is flat, 1 grows in proportion to width."""
    widths = sorted(sizes)
    return {layer: float(np.polyfit(np.log(widths), np.log([sizes[width][layer] for width in widths]), 1)[0])
            for layer in sizes[widths[0]]}


def coord_check_png(sizes: dict[str, dict[int, dict[str, float]]], path: str) -> str:
    """One panel per parametrization: each layer's mean |coordinate| against width, log-log."""
    from tracking.charts import default_style, new_figure, save_png

    with default_style():
        fig = new_figure((5 * len(sizes), 4))
        for axes, (name, by_width) in zip(fig.subplots(1, len(sizes), sharey=True), sizes.items()):
            widths = sorted(by_width)
            for layer in by_width[widths[0]]:
                axes.plot(widths, [by_width[width][layer] for width in widths], "o-", label=layer)
            axes.set(xscale="log", yscale="log", xlabel="width (d_model)", title=f"{name}: coordinate check")
            axes.set_xticks(widths, [str(width) for width in widths])
            axes.minorticks_off()
        fig.axes[0].set_ylabel("mean |coordinate| after a few Adam steps")
        fig.axes[0].legend(fontsize=8)
        return save_png(fig, path)
