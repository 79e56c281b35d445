"""Substring dedup (ExactSubstr by hashed word windows) in-process on real text: an excerpt of 200 words copied
into another article, and the excerpt alone as a short page, survive in exactly one document; unrelated texts on
the same topic (four inaugural addresses) lose nothing; the result does not depend on the sharding."""
from __future__ import annotations

from configs.dedup import DedupConfig
from tasks.dedup.substrings import without_windows
from tasks.dedup.windows import window_keys, word_spans
from test_dedup_steps import document, run_dedup      # pytest puts tests/ on the path

SPEECHES = ["1961-Kennedy.txt", "1965-Johnson.txt", "1969-Nixon.txt", "1977-Carter.txt"]


def _articles(data_dir) -> list[str]:
    """Wikipedia articles of the wikitext-2 test split, one paragraph each, at least 400 words."""
    text = (data_dir / "reference" / "wikitext-2" / "wiki.test.raw").read_text(encoding="utf-8")
    paragraphs = [line.strip() for line in text.splitlines() if len(line.split()) >= 400 and not line.startswith(" =")]
    return paragraphs[:2]


def _corpus(data_dir) -> tuple[list[dict], str]:
    source, other = _articles(data_dir)
    words = source.split()
    excerpt = " ".join(words[100:300])                              # 200 words from the middle of a paragraph
    middle = len(other) // 2
    host = other[:middle] + " " + excerpt + " " + other[middle:]    # republished inside a longer article
    speeches = [(data_dir / "reference" / "speeches_nltk" / "inaugural" / name).read_text(encoding="utf-8")
                for name in SPEECHES]
    docs = [document("source", source), document("host", host), document("excerpt-page", excerpt)]
    docs += [document(f"speech-{index}", text) for index, text in enumerate(speeches)]
    return docs, excerpt


def test_windows_match_across_documents_whatever_the_case_and_position():
    first, second = "Alpha beta GAMMA delta epsilon", "zeta alpha Beta gamma delta"
    keys = window_keys(first, word_spans(first), 3), window_keys(second, word_spans(second), 3)
    assert keys[0][0] == keys[1][1] and len(set(keys[0]) & set(keys[1])) == 2
    assert window_keys("too short", word_spans("too short"), 3).size == 0
    assert without_windows("a b c d e f", [0, 1, 3], 2) == (" f", 1, 9)         # windows that touch merge
    assert without_windows("a b c d e f", [0, 4], 2) == (" c d ", 2, 6)


def test_a_copied_excerpt_survives_once_and_texts_on_the_same_topic_are_untouched(data_dir, tmp_path):
    docs, excerpt = _corpus(data_dir)
    config = DedupConfig(substring={"enabled": True, "min_words": 50})
    kept, removed, _ = run_dedup(tmp_path / "a", [docs[:3], docs[3:]], config)
    probe = " ".join(excerpt.split()[80:130])                          # 50 words from inside the excerpt
    holders = [doc_id for doc_id, row in kept.items() if probe.lower() in " ".join(row["text"].split()).lower()]
    assert len(holders) == 1, holders
    cut = {doc["id"] for doc in docs} - set(holders) - {f"speech-{i}" for i in range(4)}
    for doc_id in cut:                                  # the others lost it, or were nothing but it
        assert removed.get(doc_id) == "too_short_after_substring_dedup" or probe.lower() not in \
            " ".join(kept[doc_id]["text"].split()).lower()
    assert sum(doc_id in removed for doc_id in cut) <= 1
    for index in range(4):                              # four inaugural addresses share phrases, not 50-word spans
        assert kept[f"speech-{index}"]["text"] == docs[3 + index]["text"]

    # Identical in, identical out: other shards, other neighbours, another order.
    reordered = [[docs[5], docs[1]], [docs[6], docs[0], docs[3]], [docs[2], docs[4]]]
    kept_again, removed_again, _ = run_dedup(tmp_path / "b", reordered, config)
    assert removed_again == removed
    assert {doc_id: row["text"] for doc_id, row in kept_again.items()} == \
        {doc_id: row["text"] for doc_id, row in kept.items()}


def test_off_by_default_and_short_repeats_are_left(data_dir, tmp_path):
    docs, _ = _corpus(data_dir)
    kept, _, _ = run_dedup(tmp_path / "off", [docs], DedupConfig())
    assert kept["host"]["text"] == docs[1]["text"]
    shared = " ".join(["the same thirty word sentence appears in both"] * 4).split()[:30]
    pair = [document("x", "alpha " * 60 + " ".join(shared)), document("y", " ".join(shared) + " omega" * 60)]
    # MinHash off: two texts this repetitive share most of their few distinct bigrams, and only the span matters here
    substring_only = DedupConfig(minhash={"enabled": False}, substring={"enabled": True, "min_words": 50})
    kept, _, _ = run_dedup(tmp_path / "short", [pair], substring_only)
    assert {row["text"] for row in kept.values()} == {doc["text"] for doc in pair}   # 30 shared words < 50
