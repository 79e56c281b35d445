"""The SentencePiece model as a Hugging Face fast tokenizer that gives SentencePiece's ids.

Built from the model's own settings rather than by `transformers`' generic converter, whose normalizer does not
follow `remove_extra_whitespaces` and whose vocabulary matches `<s>` or `<0x41>` typed in the text:
- normalization: the precompiled character map (nmt_nfkc, nfkc, the *_cf rules; none for identity), then, with
  `remove_extra_whitespaces`, spaces stripped at both ends and runs of them collapsed (SentencePiece looks at ' '
  only, after the map), then the leading space of `add_dummy_prefix`, then ' ' -> '▁';
- model: BPE with merges ordered as SentencePiece ranks them (the merged piece's score, that is its id), or Unigram
  with the same scores; `byte_fallback` as trained; no pre-tokenizer, since SentencePiece encodes the whole line;
- special pieces (<unk> <s> </s> <pad>) are ids, never matched in the text (`split_special_tokens`), and nothing is
  added around the ids: SentencePiece's `encode` adds no <s> either;
- decoding: '▁' -> ' ', byte pieces -> UTF-8, the leading space of `add_dummy_prefix` dropped, <unk> as
  SentencePiece's ' ⁇ '.

SentencePiece settings this cannot reproduce are refused (`TokenizerNotConvertible`), none of which
tasks/tokenize/train.py uses.
"""
from __future__ import annotations

import sys
from pathlib import Path

from sentencepiece import sentencepiece_model_pb2 as spm_model
from tokenizers import Regex, Tokenizer, decoders, models, normalizers

Piece = spm_model.ModelProto.SentencePiece
SPACE = "▁"


class TokenizerNotConvertible(ValueError):
    """A SentencePiece setting that a Hugging Face fast tokenizer cannot reproduce id for id."""


def fast_tokenizer(model_proto: bytes) -> Tokenizer:
    """The `tokenizers` equivalent of a serialized SentencePiece model."""
    proto = spm_model.ModelProto.FromString(model_proto)
    _refuse_what_cannot_match(proto)
    tokenizer = Tokenizer(_model(proto))
    tokenizer.normalizer = _normalizer(proto.normalizer_spec)
    tokenizer.decoder = _decoder(proto)
    return tokenizer


def save_hf_tokenizer(model_proto: bytes, out_dir: str | Path, model_max_length: int) -> None:
    """tokenizer.json, tokenizer_config.json and special_tokens_map.json, loadable by `AutoTokenizer`."""
    from transformers import PreTrainedTokenizerFast

    proto = spm_model.ModelProto.FromString(model_proto)
    spec = proto.trainer_spec
    special = {name: proto.pieces[index].piece for name, index in
               (("unk_token", spec.unk_id), ("bos_token", spec.bos_id), ("eos_token", spec.eos_id),
                ("pad_token", spec.pad_id)) if index >= 0}
    PreTrainedTokenizerFast(tokenizer_object=fast_tokenizer(model_proto), model_max_length=model_max_length,
                            split_special_tokens=True, clean_up_tokenization_spaces=False,
                            **special).save_pretrained(str(out_dir))


def _refuse_what_cannot_match(proto) -> None:
    trainer, normalizer = proto.trainer_spec, proto.normalizer_spec
    if trainer.model_type not in (spm_model.TrainerSpec.BPE, spm_model.TrainerSpec.UNIGRAM):
        raise TokenizerNotConvertible(f"model_type {spm_model.TrainerSpec.ModelType.Name(trainer.model_type)}: "
                                      "only bpe and unigram models are converted")
    if any(piece.type == Piece.USER_DEFINED for piece in proto.pieces):
        raise TokenizerNotConvertible("user_defined_symbols: SentencePiece matches them inside normalized text, "
                                      "which a fast tokenizer's added tokens do not reproduce")
    if trainer.treat_whitespace_as_suffix or not normalizer.escape_whitespaces:
        raise TokenizerNotConvertible("treat_whitespace_as_suffix / escape_whitespaces=false: only the default "
                                      "'▁' prefix is converted")
    if proto.denormalizer_spec.precompiled_charsmap:
        raise TokenizerNotConvertible("denormalizer_spec: decoding with a denormalization rule is not converted")


def _model(proto):
    trainer = proto.trainer_spec
    if trainer.model_type == spm_model.TrainerSpec.BPE:
        return models.BPE({piece.piece: index for index, piece in enumerate(proto.pieces)}, _bpe_merges(proto),
                          unk_token=proto.pieces[trainer.unk_id].piece, fuse_unk=True,
                          byte_fallback=trainer.byte_fallback)
    return models.Unigram(_unigram_scores(proto), unk_id=trainer.unk_id, byte_fallback=trainer.byte_fallback)


def _bpe_merges(proto) -> list[tuple[str, str]]:
    """Every split of a normal piece into two normal pieces, in SentencePiece's order: the merged piece's score
    (higher first, and its id is its rank), then the left part's id. Special and byte pieces take part in none."""
    normal = {piece.piece: index for index, piece in enumerate(proto.pieces) if piece.type == Piece.NORMAL}
    merges = sorted((index, normal[piece[:cut]], piece[:cut], piece[cut:]) for piece, index in normal.items()
                    for cut in range(1, len(piece)) if piece[:cut] in normal and piece[cut:] in normal)
    return [(left, right) for _, _, left, right in merges]


def _unigram_scores(proto) -> list[tuple[str, float]]:
    """SentencePiece never matches special or byte pieces in text; the Unigram model matches every piece, so
    those get a score below any spelling of them by single pieces. The unknown-character score the model derives
    from the lowest score only shifts every segmentation of a line by the same amount (an unknown character has
    one way through the lattice). What remains: a line that spells such a piece ('</s>', '<0x41>') with a
    character the vocabulary lacks gets that piece here, and unknown characters from SentencePiece."""
    normal_scores = [piece.score for piece in proto.pieces if piece.type == Piece.NORMAL]
    longest = max(len(piece.piece) for piece in proto.pieces)
    never = min(normal_scores) * (longest + 1) - 1.0
    return [(piece.piece, piece.score if piece.type == Piece.NORMAL else never) for piece in proto.pieces]


def _normalizer(spec) -> normalizers.Normalizer:
    steps = [normalizers.Precompiled(spec.precompiled_charsmap)] if spec.precompiled_charsmap else []
    if spec.remove_extra_whitespaces:
        steps += [normalizers.Replace(Regex("^ +| +$"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
    if spec.add_dummy_prefix:
        steps.append(normalizers.Prepend(" "))      # not to an empty line, as SentencePiece
    steps.append(normalizers.Replace(" ", SPACE))
    return normalizers.Sequence(steps)


def _decoder(proto) -> decoders.Decoder:
    spec = proto.normalizer_spec
    steps = [decoders.Replace(proto.pieces[proto.trainer_spec.unk_id].piece, proto.trainer_spec.unk_surface),
             decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
    if spec.add_dummy_prefix or spec.remove_extra_whitespaces:
        # SentencePiece drops the leading space `add_dummy_prefix` added, and with remove_extra_whitespaces every one
        steps.append(decoders.Strip(" ", sys.maxsize if spec.remove_extra_whitespaces else 1, 0))
    return decoders.Sequence(steps)
