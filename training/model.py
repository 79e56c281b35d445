"""A decoder-only transformer, whole in one file (nanoGPT's model.py is the model followed).

Pre-norm blocks: RMSNorm -> causal self-attention (rotary position embeddings, RMSNorm on queries and keys)
-> residual; RMSNorm -> SwiGLU MLP -> residual. Token embeddings are tied to the output projection (unless
`tie_embeddings` is False: pipeline parallelism puts them on different ranks). No biases.
Sizes come from `ModelConfig` (training/shapes.py): a tiny one for tests and the 124M / 350M / 1B presets.

Parametrization: standard (`sp`, GPT-2's) or μP (`mup`, Yang et al. 2022, "Tensor Programs V", table 3 for Adam),
relative to a base width at which the two are the same model. With m = d_model / base_width, μP scales the
hidden matrices' initial standard deviation by 1/sqrt(m) (their fan-in grows with width) and their Adam learning
rate by 1/m (training/optim.py), multiplies the logits by 1/m (the tied readout's output multiplier, as the mup
package's MuSharedReadout), and scales attention logits by 1/head_dim instead of 1/sqrt(head_dim) (as
sqrt(base_head_dim) / head_dim, equal at the base width). Embeddings and norm gains keep their initialisation and
learning rate. So a learning rate tuned at the base width stays right at other widths.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed.tensor import DTensor

from training.loss import linear_cross_entropy, loss_function
from training.shapes import ModelConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def rotary_tables(config: ModelConfig, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Each position's rotation as two tables of shape (seq_len, head_dim / 2, 2): (cos, cos) and (-sin, sin) for
    each pair of channels, so that `apply_rotary` rotates every pair at once."""
    inverse = 1.0 / config.rope_theta ** (torch.arange(0, config.head_dim, 2, device=device).float() / config.head_dim)
    angles = torch.outer(torch.arange(config.seq_len, device=device).float(), inverse)
    cos, sin = angles.cos(), angles.sin()
    return torch.stack((cos, cos), dim=-1), torch.stack((-sin, sin), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[2i], x[2i+1]) of x (batch, time, heads, head_dim) by the position's angles: (x[2i] cos -
    x[2i+1] sin, x[2i+1] cos + x[2i] sin), the same floats as the textbook form, with fewer passes over x."""
    pairs = x.float().unflatten(-1, (-1, 2))
    time = x.shape[1]
    cos, sin = cos[:time, None], sin[:time, None]                      # broadcast over heads
    return (pairs * cos + pairs.flip(-1) * sin).flatten(-2).type_as(x)


class Attention(nn.Module):
    """Separate q, k and v projections (not one fused one): tensor parallelism splits each by output rows, and a
    split of a fused projection would hand a rank a mix of q, k and v rows instead of whole heads of each. The
    head count is read from the projections' outputs, so a tensor-parallel rank runs its own heads."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.head_dim, self.scale = config.head_dim, config.attention_scale
        self.q, self.k, self.v = (nn.Linear(config.d_model, config.d_model, bias=False) for _ in range(3))
        self.out = nn.Linear(config.d_model, config.d_model, bias=False)
        self.q_norm = RMSNorm(config.head_dim, config.norm_eps)   # QK-norm keeps attention logits bounded
        self.k_norm = RMSNorm(config.head_dim, config.norm_eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, time, _ = x.shape
        q, k, v = (projection(x).view(batch, time, -1, self.head_dim) for projection in (self.q, self.k, self.v))
        q, k = (apply_rotary(norm(t), cos, sin).transpose(1, 2) for norm, t in ((self.q_norm, q), (self.k_norm, k)))
        y = F.scaled_dot_product_attention(q, k, v.transpose(1, 2), is_causal=True, scale=self.scale)   # (b, h, t, d)
        return self.out(y.transpose(1, 2).reshape(batch, time, -1))


class SwiGLU(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.gate = nn.Linear(config.d_model, config.ffn_dim, bias=False)
        self.up = nn.Linear(config.d_model, config.ffn_dim, bias=False)
        self.down = nn.Linear(config.ffn_dim, config.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.attention_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attention = Attention(config)
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.mlp = SwiGLU(config)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.final_norm = RMSNorm(config.d_model, config.norm_eps)
        # tied: one parameter, named embedding.weight; made on meta, it draws no random numbers of its own
        self.output = nn.Linear(config.d_model, config.vocab_size, bias=False,
                                device="meta" if config.tie_embeddings else None)
        if config.tie_embeddings:
            self.output.weight = self.embedding.weight
        cos, sin = rotary_tables(config)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.compile_loss = False       # training.parallel.shard_model sets it when the run compiles
        self.tensor_parallel = 1        # training.tensor_parallel sets the ranks the model is split over
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GPT-2's initialization: normal(0, 0.02), output projections of residual branches scaled by
        1/sqrt(2 * layers) so the residual stream's variance does not grow with depth; under μP the hidden
        matrices' by 1/sqrt(width multiplier) too."""
        hidden_scale = 1 / math.sqrt(self.config.width_multiplier)
        for name, parameter in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(parameter)
            elif name in ("embedding.weight", "output.weight"):          # output.weight: untied only
                nn.init.normal_(parameter, mean=0.0, std=0.02)
            else:
                std = 0.02 / math.sqrt(2 * self.config.n_layers) if name.endswith(("out.weight", "down.weight")) \
                    else 0.02
                nn.init.normal_(parameter, mean=0.0, std=std * hidden_scale)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor | None = None,
                z_loss: float = 0.0) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Logits (batch, time, vocab) for tokens (batch, time); time <= seq_len. Given targets, the training
        loss and cross-entropy instead (training.loss), without the whole logits: in forward, so that FSDP2's
        hooks have gathered the tied weight. Under tensor parallelism the loss is of the logits each rank holds
        for its slice of the vocabulary (torch's loss_parallel, training/tensor_parallel.py), and a sequence that
        the ranks cannot split evenly (a prompt) is padded on the right: attention is causal, so the padding
        changes no logit of the tokens before it."""
        time = tokens.shape[1]
        if time > self.config.seq_len:
            raise ValueError(f"sequence of {time} tokens exceeds seq_len {self.config.seq_len}")
        x = self.embedding(F.pad(tokens, (0, -time % self.tensor_parallel)))
        for block in self.blocks:
            x = block(x, self.rope_cos, self.rope_sin)
        hidden = self.final_norm(x)
        mup = self.config.parametrization == "mup"
        if targets is not None and self.tensor_parallel == 1:
            scale = 1 / self.config.width_multiplier if mup else 1.0
            return linear_cross_entropy(hidden, self.output.weight, targets, z_loss, scale, self.compile_loss)
        logits = readout(self.output, hidden, self.config)
        if targets is not None:
            return tuple(value.to_local() for value in loss_function(logits, targets, z_loss))    # replicated
        return logits.full_tensor()[:, :time] if isinstance(logits, DTensor) else logits

    @torch.no_grad()
    def generate(self, tokens: torch.Tensor, new_tokens: int, temperature: float = 1.0,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """Sample `new_tokens` continuations (temperature 0 = greedy), feeding back the last seq_len tokens."""
        return generate(self.last_logits, tokens, new_tokens, self.config.seq_len, temperature, generator)

    def last_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """The logits (batch, vocab) after each sequence's last token."""
        return self(tokens)[:, -1, :]


@torch.no_grad()
def generate(last_logits: Callable[[torch.Tensor], torch.Tensor], tokens: torch.Tensor, new_tokens: int, seq_len: int,
             temperature: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """`new_tokens` continuations of tokens (batch, time) sampled from `last_logits(window)` (the logits after each
    row's last token: a model's, or a pipeline's), fed back the last seq_len tokens; temperature 0 = greedy."""
    for _ in range(new_tokens):
        logits = last_logits(tokens[:, -seq_len:])
        if temperature == 0:
            chosen = logits.argmax(-1, keepdim=True)
        else:
            chosen = torch.multinomial(F.softmax(logits / temperature, dim=-1), 1, generator=generator)
        tokens = torch.cat((tokens, chosen), dim=1)
    return tokens


def readout(output: nn.Linear, hidden: torch.Tensor, config: ModelConfig) -> torch.Tensor:
    """The logits of the final norm's output: the output projection, times 1 / width multiplier under μP."""
    logits = output(hidden)
    return logits / config.width_multiplier if config.parametrization == "mup" else logits
