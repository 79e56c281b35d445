"""The model's sizes without torch: `ModelConfig`, the presets and `parameter_count` by formula, and the loss's
chunk size. What the planner (training/plan.py) reads in processes that never build a model: `sluice validate`,
`sluice plan` and the preflight of `sluice run` import no torch (~4 s each on 2 cores)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from configs.training import MODEL_PRESETS

CHUNK_ELEMENTS = 2 ** 28        # logits per chunk of training/loss.py's linear_cross_entropy: 1 GiB in fp32


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 32000
    seq_len: int = 1024
    n_layers: int = 12
    d_model: int = 768
    n_heads: int = 12
    ffn_multiple: int = 256      # the SwiGLU hidden size is 8/3 d_model rounded up to this multiple
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    parametrization: str = "sp"      # "sp" or "mup"
    base_width: int | None = None    # mup: the d_model where it equals sp (default: d_model)
    tie_embeddings: bool = True      # False: the output projection has a matrix of its own (pipeline parallelism)

    def __post_init__(self):
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model {self.d_model} must split into {self.n_heads} heads of even size")
        if self.parametrization not in ("sp", "mup"):
            raise ValueError(f"parametrization must be sp or mup, got {self.parametrization!r}")

    @property
    def width_multiplier(self) -> float:
        """m = d_model / base_width under μP; 1 under standard parametrization."""
        return self.d_model / (self.base_width or self.d_model) if self.parametrization == "mup" else 1.0

    @property
    def attention_scale(self) -> float:
        """1/sqrt(head_dim) (sp); sqrt(base_head_dim) / head_dim (mup), the same at the base width."""
        base_head_dim = self.head_dim / self.width_multiplier
        return math.sqrt(base_head_dim) / self.head_dim

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def ffn_dim(self) -> int:
        hidden = int(8 * self.d_model / 3)
        return self.ffn_multiple * math.ceil(hidden / self.ffn_multiple)

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS = {name: ModelConfig(**sizes) for name, sizes in MODEL_PRESETS.items()}


def parameter_count(config: ModelConfig) -> int:
    """Parameters of `Transformer(config)` by formula (the planner uses it; a test checks it against torch)."""
    attention = 4 * config.d_model * config.d_model + 2 * config.head_dim
    mlp = 3 * config.d_model * config.ffn_dim
    block = attention + mlp + 2 * config.d_model
    embeddings = config.vocab_size * config.d_model * (1 if config.tie_embeddings else 2)
    return embeddings + config.n_layers * block + config.d_model
