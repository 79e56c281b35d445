"""Data-mixture sampling over token shards: weights met at the granularity of pieces, repetition up to the cap,
clear errors, a validation split disjoint from training, results independent of shard placement, long documents
drawn in proportion, and draws coupled across variants that share documents."""
from __future__ import annotations

import numpy as np
import pytest

from configs.mixture import MixtureConfig
from storage.document_shard import DOCUMENT_SCHEMA, write_documents
from storage.token_shard import TokenShard, TokenShardWriter
from tasks.mixture.mix import mix
from tasks.mixture.placement import parts_for, shards_at_most
from tasks.mixture.selection import BINS, FILL_WINDOW, ShardCount, plan_draws

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


def test_the_card_rows_are_given_before_the_draws_are_written(tmp_path):
    """The stage draws the weights chart from them while the last passes write (tasks.mixture.stage)."""
    out = tmp_path / "out"
    seen = []

    def planned(rows: list[dict]) -> None:
        seen.append((rows, sorted(path.name for path in out.rglob("*.bin"))))

    result = mix(write(tmp_path, corpus(), 3), str(out), VOCAB, two_sources(20_000), planned=planned)
    assert len(seen) == 1
    rows, written_then = seen[0]
    assert rows == result["sources"] and written_then == []     # nothing of the output existed yet
    assert sorted(path.name for path in out.rglob("*.bin"))      # and it does now


def test_a_source_is_repeated_up_to_its_cap(tmp_path):
    docs = corpus()
    result = mix(write(tmp_path, docs, 2), str(tmp_path / "out"), VOCAB, two_sources(80_000))
    german = next(row for row in result["sources"] if row["source"] == "german")
    assert 1.0 < german["epochs"] <= 2.0
    drawn = documents_in(result, "train")
    assert len(drawn) > len(set(drawn))                      # repeats (documents under chunk_tokens: whole)
    with pytest.raises(ValueError, match=r"needs .* tokens .* at most 2.0 epochs"):
        mix(write(tmp_path / "b", docs, 2), str(tmp_path / "out-b"), VOCAB, two_sources(400_000))


def test_the_cut_and_the_fill_window_are_those_of_the_dense_bins():
    """The plan sums only the occupied bins; its cut and window are those their definitions give on all 2^20 bins:
    the cut is the last boundary with at most the target's remainder below it, the window ends at the first boundary
    with FILL_WINDOW more pieces below it (bins at both ends, empty bins and pieces of no tokens included)."""
    rng = np.random.default_rng(3)
    for trial in range(40):
        counts = []
        for _ in range(3):
            bins = np.unique(np.concatenate([rng.integers(0, 64, 20), rng.integers(0, BINS, 300), [0, BINS - 1]]))
            documents = rng.integers(1, 3, bins.size)
            tokens = documents * rng.integers(1, 50, bins.size) * (rng.random(bins.size) > 0.2)     # a fifth of none
            counts.append(ShardCount([bins], [tokens], [documents], 0, 0))
        tokens, documents = np.zeros(BINS + 1, np.int64), np.zeros(BINS + 1, np.int64)
        for count in counts:
            np.add.at(tokens, count.bins[0] + 1, count.tokens[0])
            np.add.at(documents, count.bins[0] + 1, count.pieces[0])
        below_tokens, below_documents = np.cumsum(tokens), np.cumsum(documents)       # in the bins below each boundary
        # half the budgets fall on a boundary, where the cut must take the last of the boundaries of equal tokens
        budget = int(rng.choice(below_tokens)) if trial % 2 else int(rng.integers(0, 2 * below_tokens[-1]))
        config = MixtureConfig(token_budget=budget, sources=[{"name": "all", "where": {"lang": ["en"]}, "weight": 1,
                                                               "max_epochs": 3}])
        (draw,) = plan_draws(counts, config)
        remaining = budget % below_tokens[-1]
        assert draw.cut == np.flatnonzero(below_tokens <= remaining).max()
        assert (draw.cut_tokens, draw.cut_pieces) == (below_tokens[draw.cut], below_documents[draw.cut])
        assert draw.window_end == min(BINS, np.flatnonzero(below_documents >= draw.cut_pieces + FILL_WINDOW).min(
            initial=BINS))


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


def drawn_tokens(result: dict) -> dict[int, int]:
    """Training tokens drawn per document (every token of document i is i + 10)."""
    counts: dict[int, int] = {}
    for shard in result["shards"]:
        if "/train." in shard["path"]:
            tokens = np.asarray(TokenShard(shard["path"]).tokens)
            for value, count in zip(*np.unique(tokens, return_counts=True)):
                counts[int(value) - 10] = counts.get(int(value) - 10, 0) + int(count)
    return counts


def test_a_giant_document_is_drawn_in_proportion_not_all_or_nothing(tmp_path):
    """A page of 6,000 tokens among 400 short documents (~64k tokens), a budget of a fifth: drawn whole, the page
    is a tenth of the draw or absent; drawn in pieces of 64 tokens, each seed takes about a fifth of it, in pieces
    of at most 64 tokens."""
    docs = corpus() + [{"id": "giant", "lang": "en", "length": 6000, "token": 400 + 10}]
    pairs = write(tmp_path, docs, 2)
    shares = []
    for seed in range(4):
        config = MixtureConfig(token_budget=13_000, validation_fraction=0.0, seed=seed, chunk_tokens=64)
        result = mix(pairs, str(tmp_path / f"out-{seed}"), VOCAB, config)
        shares.append(drawn_tokens(result).get(400, 0) / 6000)
        pieces = [len(TokenShard(shard["path"]).document(i)) for shard in result["shards"] for i in
                  range(shard["documents"])]
        assert max(pieces) <= 64 and result["train_pieces"] == len(pieces)
    assert all(0.1 < share < 0.3 for share in shares), shares
    whole = [drawn_tokens(mix(pairs, str(tmp_path / f"whole-{seed}"), VOCAB, MixtureConfig(
        token_budget=13_000, validation_fraction=0.0, seed=seed, chunk_tokens=10_000))).get(400, 0) / 6000
        for seed in range(4)]
    assert set(whole) <= {0.0, 1.0}                             # the whole-document draw: all or nothing


def test_variants_that_share_documents_draw_them_alike_for_a_seed(tmp_path):
    """A filtered variant (every third document removed) and the unfiltered corpus, one seed and budget: each
    piece of a shared document has one point in both, so the unfiltered draw (the lower cut) of a shared
    document's pieces is contained in the filtered one's; a different seed draws otherwise."""
    docs = [doc | {"length": doc["length"] * 4} for doc in corpus()]
    kept = [doc for index, doc in enumerate(docs) if index % 3]
    config = MixtureConfig(token_budget=40_000, validation_fraction=0.0, chunk_tokens=64)
    full = drawn_tokens(mix(write(tmp_path / "a", docs, 3), str(tmp_path / "out-a"), VOCAB, config))
    filtered = drawn_tokens(mix(write(tmp_path / "b", kept, 2), str(tmp_path / "out-b"), VOCAB, config))
    shared = [doc["token"] - 10 for doc in kept]
    contained = [full.get(doc, 0) <= filtered.get(doc, 0) for doc in shared]
    assert sum(contained) >= 0.98 * len(shared)                 # all but fill-window pieces
    other_seed = drawn_tokens(mix(write(tmp_path / "c", kept, 2), str(tmp_path / "out-c"), VOCAB,
                                  config.model_copy(update={"seed": 1})))
    assert sum(full.get(doc, 0) <= other_seed.get(doc, 0) for doc in shared) < 0.9 * len(shared)


def test_the_order_seed_reorders_the_stream_but_draws_the_same_pieces(tmp_path):
    pairs = write(tmp_path, corpus(), 3)
    config = two_sources(20_000)
    base = mix(pairs, str(tmp_path / "base"), VOCAB, config)
    same = mix(pairs, str(tmp_path / "same"), VOCAB, config.model_copy(update={"order_seed": config.seed}))
    other = mix(pairs, str(tmp_path / "other"), VOCAB, config.model_copy(update={"order_seed": 5}))
    assert [s["sha256"] for s in base["shards"]] == [s["sha256"] for s in same["shards"]]
    assert drawn_tokens(other) == drawn_tokens(base)
    assert documents_in(other, "train") != documents_in(base, "train")


def reading_steps(result: dict, order: str) -> dict[int, float]:
    """The mean position (in windows read) at which each training document's tokens are read."""
    from training.sequences import TokenSequences

    paths = [shard["path"] for shard in result["shards"] if "/train." in shard["path"]]
    reader = TokenSequences(paths, 16, seed=3, order=order, block=8)
    seen: dict[int, list[int]] = {}
    for step in range(reader.windows_per_rank):
        for token in np.unique(reader.next_batch(1)[0]):
            seen.setdefault(int(token) - 10, []).append(step)
    return {doc: float(np.mean(steps)) for doc, steps in seen.items()}


@pytest.mark.parametrize("order", ["stream", "shuffle"])
def test_runs_on_mixtures_that_share_pieces_read_them_at_about_the_same_step_in_stream_order(tmp_path, order):
    """A filtered variant (every third document removed) and the unfiltered corpus, one seed, documents of one
    piece each: read in stream order, a shared document comes at about the same point of both runs; shuffled,
    anywhere."""
    docs = corpus(1000)
    kept = [doc for index, doc in enumerate(docs) if index % 3]
    config = MixtureConfig(token_budget=40_000, validation_fraction=0.0, chunk_tokens=512)
    full = reading_steps(mix(write(tmp_path / "a", docs, 3), str(tmp_path / "out-a"), VOCAB, config), order)
    filtered = reading_steps(mix(write(tmp_path / "b", kept, 2), str(tmp_path / "out-b"), VOCAB, config), order)
    shared = sorted(set(full) & set(filtered))
    correlation = np.corrcoef([full[doc] for doc in shared], [filtered[doc] for doc in shared])[0, 1]
    assert len(shared) > 100
    assert correlation > 0.9 if order == "stream" else abs(correlation) < 0.3, correlation


def test_a_source_selects_by_the_integer_topic_the_domain_stage_adds(tmp_path):
    import pyarrow as pa

    from storage.parquet import read_table, write_table

    pairs = write(tmp_path, corpus(), 2)
    for _, url in pairs:           # as the domain stage writes it: an int32 column; here document number mod 3
        table = read_table(url)
        topics = [int(doc_id.split("-")[1]) % 3 for doc_id in table.column("id").to_pylist()]
        write_table(table.append_column("topic", pa.array(topics, pa.int32())), url)
    config = MixtureConfig(token_budget=5_000, validation_fraction=0.0,
                           sources=[{"name": "topic-1", "where": {"topic": [1]}, "weight": 1}])
    drawn = set(documents_in(mix(pairs, str(tmp_path / "out"), VOCAB, config), "train"))
    assert drawn and all(doc % 3 == 1 for doc in drawn)
