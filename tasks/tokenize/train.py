"""Train a SentencePiece model on the seeded document sample and measure it on held-out documents.

Training reads sentences from memory and writes the model to memory (`sentence_iterator`, `model_writer`), so
the model file holds no local path and the same sample gives byte-identical models wherever the store is.
"""
from __future__ import annotations

import io
import time
from collections import defaultdict

import fsspec
import sentencepiece as spm

from configs.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, TokenizerConfig
from storage.fs import atomic_output
from tasks.errors import TooLittleData
from tasks.tokenize.sample import choose, chosen_documents

MODEL_FILE = "tokenizer.model"          # the tokenizer stage's one output file


def train_tokenizer(shard_urls: list[str], model_url: str, config: TokenizerConfig) -> dict:
    started = time.perf_counter()
    train, heldout = choose(shard_urls, config.seed, config.heldout_fraction, config.sample_documents,
                            config.max_heldout_documents)
    if not train.hashes.size:
        raise TooLittleData("no documents to train the tokenizer on: the stages before it kept none (see their "
                            "drops); add input or loosen the filters")
    lines = [line for doc in chosen_documents(shard_urls, train, ["text"])
             for line in doc["text"].split("\n") if line.strip()]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=config.vocab_size,
        model_type=config.model_type, byte_fallback=config.byte_fallback,
        normalization_rule_name=config.normalization, remove_extra_whitespaces=config.remove_extra_whitespaces,
        character_coverage=config.character_coverage,
        input_sentence_size=config.input_sentence_size, shuffle_input_sentence=config.shuffle_input_sentence,
        unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID, hard_vocab_limit=False,
        num_threads=config.num_threads, minloglevel=2)
    with atomic_output(model_url) as tmp, fsspec.open(tmp, "wb") as handle:
        handle.write(model.getvalue())
    processor = spm.SentencePieceProcessor(model_proto=model.getvalue())
    evaluation = heldout_measures(processor, chosen_documents(shard_urls, heldout, ["text", "lang"]))
    return {"model": model_url, "vocab_size": processor.get_piece_size(), "train_documents": int(train.hashes.size),
            "train_lines": len(lines), "heldout_documents": int(heldout.hashes.size), "heldout": evaluation,
            "seconds": round(time.perf_counter() - started, 3)}


def heldout_measures(processor: spm.SentencePieceProcessor, documents: list[dict]) -> list[dict]:
    """Per language and overall: fertility (tokens per whitespace word) and UTF-8 bytes per token, the number
    that turns a loss per token into bits per byte. Fertility means little for scripts without spaces."""
    totals: dict[str, dict[str, int]] = defaultdict(lambda: {"documents": 0, "words": 0, "bytes": 0, "tokens": 0})
    token_counts = [len(ids) for ids in processor.encode([doc["text"] for doc in documents])]
    for doc, tokens in zip(documents, token_counts):
        for lang in (doc["lang"] or "unknown", "all"):
            total = totals[lang]
            total["documents"] += 1
            total["words"] += len(doc["text"].split())
            total["bytes"] += len(doc["text"].encode("utf-8", "surrogatepass"))
            total["tokens"] += tokens
    return [{"lang": lang, **total,
             "fertility": round(total["tokens"] / total["words"], 4) if total["words"] else None,
             "bytes_per_token": round(total["bytes"] / total["tokens"], 4) if total["tokens"] else None}
            for lang, total in sorted(totals.items(), key=lambda item: (item[0] == "all", -item[1]["documents"]))]


def heldout_bytes_per_token(heldout: list[dict]) -> float | None:
    """UTF-8 bytes per token over all held-out languages together: each language's figure weighted by its tokens."""
    tokens = sum(row["tokens"] for row in heldout)
    return round(sum(row["bytes_per_token"] * row["tokens"] for row in heldout) / tokens, 4) if tokens else None
