"""Tokenizer training and tokenization, in process on real text: a seeded sample that does not depend on shard
placement, byte-identical models, held-out measures, EOS-separated token shards the trainer's reader accepts."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from document_shards import document, write_shards     # tests/document_shards.py (pytest puts tests/ on the path)

from configs.tokenizer import EOS_ID, TokenizerConfig
from storage.token_shard import TokenShard
from tasks.tokenize.encode import TokenizeJob, tokenize_shard
from tasks.tokenize.sample import choose, chosen_documents
from tasks.tokenize.train import train_tokenizer
from training.sequences import TokenSequences


@pytest.fixture(scope="module")
def documents(data_dir) -> list[dict]:
    paragraphs = []
    for path in sorted((data_dir / "reference" / "gutenberg_nltk").glob("*.txt"))[:4]:
        paragraphs += [" ".join(p.split()) for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    texts = ["\n".join(paragraphs[index:index + 8]) for index in range(0, min(len(paragraphs), 2400), 8)]
    return [document(index, text, "en") for index, text in enumerate(texts)]


def test_the_sample_depends_on_ids_and_seed_not_on_shards(tmp_path, documents):
    one = write_shards(tmp_path / "one", [documents])
    three = write_shards(tmp_path / "three", [documents[1::3], documents[::3], documents[2::3]])
    picks = []
    for urls in (one, three):
        train, heldout = choose(urls, seed=0, heldout_fraction=0.1, train=50, heldout=1000)
        picks.append(([d["id"] for d in chosen_documents(urls, train, ["id"])],
                      [d["id"] for d in chosen_documents(urls, heldout, ["id"])]))
    assert picks[0] == picks[1] and len(picks[0][0]) == 50
    assert not set(picks[0][0]) & set(picks[0][1])
    assert 0.05 * len(documents) < len(picks[0][1]) < 0.15 * len(documents)
    other_seed, _ = choose(one, seed=1, heldout_fraction=0.1, train=50, heldout=0)
    assert [d["id"] for d in chosen_documents(one, other_seed, ["id"])] != picks[0][0]


def test_the_model_is_byte_identical_and_measured_on_held_out_text(tmp_path, documents):
    urls = write_shards(tmp_path, [documents[:150], documents[150:]])
    config = TokenizerConfig(vocab_size=2000, sample_documents=200, heldout_fraction=0.1)
    first = train_tokenizer(urls, str(tmp_path / "a" / "tokenizer.model"), config)
    second = train_tokenizer(urls, str(tmp_path / "b" / "tokenizer.model"), config)
    digest = [hashlib.sha256(Path(result["model"]).read_bytes()).hexdigest() for result in (first, second)]
    assert digest[0] == digest[1] and first["vocab_size"] == 2000
    overall = first["heldout"][-1]
    assert overall["lang"] == "all" and overall["documents"] == first["heldout_documents"] > 0
    assert 1.0 < overall["fertility"] < 2.0 and 3.0 < overall["bytes_per_token"] < 6.0  # English prose, 2k BPE


def test_token_shards_hold_each_document_then_eos(tmp_path, documents):
    urls = write_shards(tmp_path, [documents[:40]])
    model = train_tokenizer(urls, str(tmp_path / "tokenizer.model"), TokenizerConfig(vocab_size=1000))["model"]
    result = tokenize_shard(TokenizeJob(urls[0], str(tmp_path / "tokens" / "docs-0"), model))
    shard = TokenShard(result["output"])
    assert len(shard) == result["documents_out"] == 40
    assert all(shard.document(i)[-1] == EOS_ID and EOS_ID not in shard.document(i)[:-1] for i in range(40))
    assert shard.tokens.dtype == np.dtype("<u2") and result["notes"]["tokens"] == shard.num_tokens
    inputs, _ = TokenSequences([result["output"]], seq_len=64, seed=0).next_batch(2)
    assert inputs.shape == (2, 64)
