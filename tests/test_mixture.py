"""Data-mixture sampling over token shards: weights met at document granularity, repetition up to the cap,
clear errors, a validation split disjoint from training, and results independent of shard placement."""
from __future__ import annotations

import numpy as np
import pytest

from configs.mixture import MixtureConfig
from storage.document_shard import DOCUMENT_SCHEMA, write_documents
from storage.token_shard import TokenShard, TokenShardWriter
from tasks.mixture.mix import mix
from tasks.mixture.placement import parts_for, shards_at_most

VOCAB = 5000


def corpus(count: int = 400) -> list[dict]:
    """Documents of 20-300 tokens; every token of document i is i + 10, so output tokens name their document."""
    rng = np.random.default_rng(0)
    return [{"id": f"doc-{i}", "lang": "en" if i % 4 else "de", "length": int(rng.integers(20, 300)), "token": i + 10}
            for i in range(count)]


def write(root, docs: list[dict], parts: int) -> list[tuple[str, str]]:
    pairs = []
    for part in range(parts):
        chunk = docs[part::parts]
        base, url = str(root / f"tokens-{part}"), str(root / f"docs-{part}.parquet")
        writer = TokenShardWriter(base, VOCAB)
        for doc in chunk:
            writer.add_document(np.full(doc["length"], doc["token"]))
        writer.close()
        rows = {name: [""] * len(chunk) for name in DOCUMENT_SCHEMA.names}
        rows.update({"id": [d["id"] for d in chunk], "lang": [d["lang"] for d in chunk],
                     "lang_score": [1.0] * len(chunk), "warc_offset": [0] * len(chunk)})
        write_documents(rows, url)
        pairs.append((base, url))
    return pairs


def two_sources(budget: int, max_epochs: float = 2.0, shard_tokens: int = 1 << 26) -> MixtureConfig:
    return MixtureConfig(token_budget=budget, validation_fraction=0.1, shard_tokens=shard_tokens, sources=[
        {"name": "english", "where": {"lang": ["en"]}, "weight": 3, "max_epochs": max_epochs},
        {"name": "german", "where": {"lang": ["de"]}, "weight": 1, "max_epochs": max_epochs}])


def documents_in(result: dict, prefix: str) -> list[int]:
    return [int(TokenShard(shard["path"]).document(i)[0]) - 10 for shard in result["shards"]
            if f"/{prefix}." in shard["path"] for i in range(shard["documents"])]


def test_weights_are_met_and_validation_is_apart(tmp_path):
    result = mix(write(tmp_path, corpus(), 3), str(tmp_path / "out"), VOCAB, two_sources(20_000))
    assert result["max_abs_weight_error"] < 0.001          # the gap after each cut is filled, not rounded
    assert abs(result["train_tokens"] - 20_000) < 20
    train, validation = set(documents_in(result, "train")), set(documents_in(result, "validation"))
    assert validation and not train & validation
    assert result["validation_documents"] == len(validation)


def test_a_source_is_repeated_up_to_its_cap(tmp_path):
    docs = corpus()
    result = mix(write(tmp_path, docs, 2), str(tmp_path / "out"), VOCAB, two_sources(80_000))
    german = next(row for row in result["sources"] if row["source"] == "german")
    assert 1.0 < german["epochs"] <= 2.0
    drawn = documents_in(result, "train")
    assert len(drawn) > len(set(drawn))                      # repeats, each a whole document
    with pytest.raises(ValueError, match=r"needs .* tokens .* at most 2.0 epochs"):
        mix(write(tmp_path / "b", docs, 2), str(tmp_path / "out-b"), VOCAB, two_sources(400_000))


def test_a_source_without_documents_is_an_error(tmp_path):
    config = MixtureConfig(sources=[{"name": "french", "where": {"lang": ["fr"]}, "weight": 1}])
    with pytest.raises(ValueError, match="'french' selects no training documents"):
        mix(write(tmp_path, corpus(), 1), str(tmp_path / "out"), VOCAB, config)


@pytest.mark.parametrize("shard_tokens", [1 << 26, 2048])
def test_the_mixture_does_not_depend_on_shard_placement(tmp_path, shard_tokens):
    """One token shard or five in reverse order give the same output shards; with small output shards the
    stream is written in several parts, each in shards of at most `shard_tokens` (a longer document alone)."""
    docs, config = corpus(), two_sources(20_000, shard_tokens=shard_tokens)
    first = mix(write(tmp_path / "a", docs, 1), str(tmp_path / "out-a"), VOCAB, config)
    second = mix(write(tmp_path / "b", list(reversed(docs)), 5), str(tmp_path / "out-b"), VOCAB, config)
    assert [s["sha256"] for s in first["shards"]] == [s["sha256"] for s in second["shards"]]
    train = [shard for shard in first["shards"] if "/train." in shard["path"]]
    assert sum(shard["tokens"] for shard in train) == first["train_tokens"]
    assert len(train) <= shards_at_most(first["train_tokens"], shard_tokens)
    if shard_tokens < 20_000:
        assert len({shard["path"].rsplit(".", 1)[0] for shard in train}) == parts_for(first["train_tokens"], shard_tokens)
        assert all(shard["tokens"] <= shard_tokens or shard["documents"] == 1 for shard in train)
    assert not (tmp_path / "out-a" / "work").exists()
