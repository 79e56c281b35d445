"""sluice's Transformer (training/model.py) as a Hugging Face Qwen3 checkpoint: `config.json` and
`model.safetensors` that `transformers.AutoModelForCausalLM` loads with no custom code, with the same logits.

Qwen3ForCausalLM has the same layout: pre-norm RMSNorm, rotary embeddings, RMSNorm per head on queries and keys,
SwiGLU, no biases, tied embeddings. What differs is mapped here:
- rotary layout: sluice rotates interleaved pairs (x[2i], x[2i+1]), Qwen3 rotates halves (x[i], x[i + head_dim/2]),
  with the same frequency for pair i. The rows of q_proj and k_proj, and q_norm and k_norm's gains, are reordered
  within each head (evens, then odds); attention scores are unchanged, since q and k are permuted alike;
- μP's attention multiplier: Qwen3 scales scores by 1/sqrt(head_dim); sluice by `attention_scale`. The ratio
  is folded into q_norm's gain (the scale of q after its norm, before the rotation, which is linear);
- μP's output multiplier 1/m: folded into the final norm's gain (a tied embedding cannot take it);
- norm epsilon, rope theta, the SwiGLU width and seq_len (as max_position_embeddings) are config values.
Every ModelConfig field is listed in `MAPPED_SETTINGS`; one that is not is refused (`ModelNotExportable`), so a
setting added to the model cannot be exported wrongly before it is mapped here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from training.model import Transformer
from training.shapes import ModelConfig

ARCHITECTURE = "Qwen3ForCausalLM"
WEIGHTS_FILE = "model.safetensors"
# ModelConfig field -> where it goes in the Qwen3 checkpoint
MAPPED_SETTINGS = {
    "vocab_size": "vocab_size",
    "seq_len": "max_position_embeddings",
    "n_layers": "num_hidden_layers",
    "d_model": "hidden_size",
    "n_heads": "num_attention_heads = num_key_value_heads; head_dim = d_model / n_heads",
    "ffn_multiple": "intermediate_size (ModelConfig.ffn_dim)",
    "rope_theta": "rope_theta",
    "norm_eps": "rms_norm_eps (every norm: layers, q/k, final)",
    "parametrization": "mup: attention multiplier into q_norm, output multiplier into the final norm",
    "base_width": "mup: the width multiplier m of both folds",
    "tie_embeddings": "tie_word_embeddings; untied, output.weight is lm_head.weight",
}


class ModelNotExportable(ValueError):
    """A model setting the Qwen3 architecture cannot express."""


@dataclass(frozen=True)
class SpecialTokenIds:
    """The tokenizer's ids that `generate` needs (None: the tokenizer has no such piece)."""
    bos: int | None
    eos: int | None
    pad: int | None


def save_qwen3(model: Transformer, out_dir: str | Path, special: SpecialTokenIds) -> Path:
    """Write config.json and model.safetensors (float32) for `model` into `out_dir`."""
    from safetensors.torch import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    qwen3_config(model.config, special).save_pretrained(out)
    weights = {name: tensor.float().contiguous() for name, tensor in qwen3_weights(model).items()}
    save_file(weights, out / WEIGHTS_FILE, metadata={"format": "pt"})
    return out


def qwen3_config(config: ModelConfig, special: SpecialTokenIds):
    """The `transformers.Qwen3Config` of a sluice model config."""
    from transformers import Qwen3Config

    unmapped = [field.name for field in fields(config) if field.name not in MAPPED_SETTINGS]
    if unmapped:
        raise ModelNotExportable(f"model setting(s) {', '.join(unmapped)} have no Qwen3 mapping "
                                 "(training/hf_export.py: MAPPED_SETTINGS)")
    return Qwen3Config(
        vocab_size=config.vocab_size, hidden_size=config.d_model, intermediate_size=config.ffn_dim,
        num_hidden_layers=config.n_layers, num_attention_heads=config.n_heads, num_key_value_heads=config.n_heads,
        head_dim=config.head_dim, hidden_act="silu", max_position_embeddings=config.seq_len,
        rms_norm_eps=config.norm_eps, rope_theta=config.rope_theta, rope_scaling=None, attention_bias=False,
        attention_dropout=0.0, use_sliding_window=False, tie_word_embeddings=config.tie_embeddings, dtype="float32",
        bos_token_id=special.bos, eos_token_id=special.eos, pad_token_id=special.pad,
        architectures=[ARCHITECTURE])


def qwen3_weights(model: Transformer) -> dict[str, torch.Tensor]:
    """Qwen3ForCausalLM's state dict (lm_head only when untied: else it is embed_tokens) from a sluice model's."""
    config, state = model.config, model.state_dict()
    within_head = _half_split_order(config.head_dim)
    order = torch.cat([head * config.head_dim + within_head for head in range(config.n_heads)])
    # Qwen3 scales attention scores by 1/sqrt(head_dim); the rest of sluice's scale goes into q's norm gain
    query_gain = config.attention_scale * math.sqrt(config.head_dim)
    weights = {"model.embed_tokens.weight": state["embedding.weight"],
               # sluice divides its logits by the width multiplier (1 under sp): the final norm gain does it here
               "model.norm.weight": state["final_norm.weight"] / config.width_multiplier}
    if not config.tie_embeddings:
        weights["lm_head.weight"] = state["output.weight"]
    for layer in range(config.n_layers):
        ours, theirs = f"blocks.{layer}.", f"model.layers.{layer}."
        weights |= {
            theirs + "input_layernorm.weight": state[ours + "attention_norm.weight"],
            theirs + "self_attn.q_proj.weight": state[ours + "attention.q.weight"][order],
            theirs + "self_attn.k_proj.weight": state[ours + "attention.k.weight"][order],
            theirs + "self_attn.v_proj.weight": state[ours + "attention.v.weight"],
            theirs + "self_attn.o_proj.weight": state[ours + "attention.out.weight"],
            theirs + "self_attn.q_norm.weight": state[ours + "attention.q_norm.weight"][within_head]
            * query_gain,
            theirs + "self_attn.k_norm.weight": state[ours + "attention.k_norm.weight"][within_head],
            theirs + "post_attention_layernorm.weight": state[ours + "mlp_norm.weight"],
            theirs + "mlp.gate_proj.weight": state[ours + "mlp.gate.weight"],
            theirs + "mlp.up_proj.weight": state[ours + "mlp.up.weight"],
            theirs + "mlp.down_proj.weight": state[ours + "mlp.down.weight"],
        }
    return weights


def _half_split_order(head_dim: int) -> torch.Tensor:
    """One head's rows from interleaved rotary pairs to halves: 0, 2, 4, ..., then 1, 3, 5, ..."""
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))
