"""Recipe model for the tokenizer: SentencePiece trained on a seeded sample of the kept documents."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from configs.base import StrictModel

# Fixed ids, so every tokenizer a recipe trains numbers its special tokens alike.
UNK_ID, BOS_ID, EOS_ID, PAD_ID = 0, 1, 2, 3
Normalization = Literal["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity"]


class TokenizerConfig(StrictModel):
    enabled: bool = True
    vocab_size: int = Field(32000, ge=16, description="target size; a corpus too small for it gets fewer pieces")
    model_type: Literal["bpe", "unigram"] = "bpe"
    byte_fallback: bool = Field(True, description="unknown characters become UTF-8 byte pieces, never <unk>")
    normalization: Normalization = Field("nmt_nfkc", description="SentencePiece normalization rule")
    remove_extra_whitespaces: bool = Field(True, description=(
        "SentencePiece's: collapse runs of whitespace and strip it at line ends (newlines become spaces either way "
        "under the nmt_ rules); lossy, so an ablation's tokenizer turns it off"))
    character_coverage: float = Field(0.9995, gt=0.0, le=1.0)
    sample_documents: int = Field(20000, ge=1, description="documents the tokenizer is trained on (seeded choice)")
    input_sentence_size: int = Field(2_000_000, ge=0, description="lines SentencePiece samples from them; 0 = all")
    shuffle_input_sentence: bool = True
    heldout_fraction: float = Field(0.02, ge=0.0, lt=1.0, description=(
        "documents never trained on, for fertility and bytes per token"))
    max_heldout_documents: int = Field(2000, ge=0)
    seed: int = Field(0, ge=0)
    num_threads: int = Field(1, ge=1)
