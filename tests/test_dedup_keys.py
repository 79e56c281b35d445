"""Dedup's building blocks: normalized keys, shingles, MinHash signatures, LSH shape, grouping and ranking."""
from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from configs.dedup import MinHashConfig, TextNormalization
from tasks.dedup.groups import candidate_pairs, star_edges
from tasks.dedup.minhash import band_keys, estimated_jaccard, shingle_hashes, signatures, token_hashes
from tasks.dedup.normalize import normalize_lines, normalize_text, normalize_url
from tasks.dedup.ranking import rank_key


@pytest.mark.parametrize(("a", "b"), [
    ("https://www.example.com/page/", "http://example.com/page"),
    ("https://example.com/p?b=2&a=1#top", "https://example.com/p?a=1&b=2"),
    ("https://example.com/p?utm_source=x&id=3&fbclid=y", "https://example.com/p?id=3"),
    ("https://Example.COM:443/p", "https://example.com/p"),
])
def test_urls_naming_the_same_page_normalize_equal(a, b):
    assert normalize_url(a) == normalize_url(b)


@pytest.mark.parametrize(("a", "b"), [
    ("https://example.com/p?id=3", "https://example.com/p?id=4"),
    ("https://example.com/a", "https://example.org/a"),
    ("https://example.com:8080/a", "https://example.com/a"),
])
def test_different_pages_normalize_different(a, b):
    assert normalize_url(a) != normalize_url(b)


def test_a_malformed_url_is_its_own_key():
    assert normalize_url("http://[::1/broken") == "http://[::1/broken"


def test_text_normalization_options():
    text = "  Hello,\tWORLD  2024! "
    assert normalize_text(text, TextNormalization()) == "hello, world 2024!"
    assert normalize_text(text, TextNormalization(strip_punctuation=True, digits_to_zero=True)) == "hello world 0000"
    assert normalize_text(text, TextNormalization(lowercase=False, collapse_whitespace=False)) == text


def test_shingles_of_short_empty_and_unspaced_text():
    config = MinHashConfig()
    assert shingle_hashes(token_hashes("", "en", config), 5).size == 0
    assert shingle_hashes(token_hashes(" \n ", "en", config), 5).size == 0
    assert shingle_hashes(token_hashes("two words", "en", config), 5).size == 1
    assert shingle_hashes(token_hashes("one two three four five six", "en", config), 5).size == 2
    chinese = token_hashes("数据去重很重要", "zh", config)
    assert chinese.size == 7  # characters, since Chinese has no spaces between words
    assert shingle_hashes(chinese, 5).size == 3


def test_shingles_are_word_bigrams_or_five_characters():
    config = MinHashConfig()
    assert (config.shingle_size("en"), config.shingle_size(""), config.shingle_size("zh")) == (2, 2, 5)


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    return np.intersect1d(a, b).size / np.union1d(a, b).size


def test_a_copy_with_every_tenth_word_edited_stays_a_duplicate_by_bigrams_not_by_five_grams(data_dir):
    """Why the default shingles are bigrams: 10% edited words leave about 81% of the bigrams (Jaccard ~0.68) but
    59% of the 5-grams (Jaccard ~0.42, below the 0.7 that verified 5-gram candidates before)."""
    config = MinHashConfig()
    words = (data_dir / "reference/speeches_nltk/inaugural/2005-Bush.txt").read_text(errors="replace").split()[:600]
    edited = " ".join(word if index % 10 else f"{word}s" for index, word in enumerate(words))
    original, copy = (token_hashes(text, "en", config) for text in (" ".join(words), edited))
    by_default = _jaccard(shingle_hashes(original, config.ngram), shingle_hashes(copy, config.ngram))
    by_five_grams = _jaccard(shingle_hashes(original, 5), shingle_hashes(copy, 5))
    assert by_default >= config.verify_jaccard and by_five_grams < 0.5, (by_default, by_five_grams)


def test_word_hashes_depend_on_the_word_only():
    config = MinHashConfig()
    hashes = token_hashes("Alpha beta  ALPHA\tgamma béta alphab", "en", config)
    assert hashes.size == 6
    assert hashes[0] == hashes[2] and len(set(hashes.tolist())) == 5
    assert token_hashes("beta", "en", config)[0] == hashes[1]


def test_signatures_estimate_jaccard_and_are_seeded():
    rng = np.random.default_rng(0)
    universe = rng.choice(2**32, size=3000, replace=False).astype(np.uint32)
    a, b = np.unique(universe[:2000]), np.unique(universe[1000:3000])   # Jaccard 1000 / 3000
    matrix = signatures([a, b, a, np.empty(0, np.uint32)], 256, seed=1)
    assert estimated_jaccard(matrix[0], matrix[2]) == 1.0
    assert abs(estimated_jaccard(matrix[0], matrix[1]) - 1 / 3) < 0.08
    assert (matrix[3] == np.iinfo(np.uint32).max).all()
    assert (signatures([a], 256, seed=1) == matrix[:1]).all()
    assert not (signatures([a], 256, seed=2) == matrix[:1]).all()


def test_band_keys_match_only_on_equal_bands_and_scope():
    matrix = np.random.default_rng(1).integers(0, 2**32, size=(3, 16), dtype=np.uint64).astype(np.uint32)
    matrix[1, :8] = matrix[0, :8]           # same first band, different second band
    keys = band_keys(matrix, 2, 8, np.zeros(3, np.int64))
    assert keys[0, 0] == keys[1, 0] and keys[0, 1] != keys[1, 1] and not (keys[2] == keys[0]).any()
    scoped = band_keys(matrix, 2, 8, np.array([1, 2, 1], np.int64))
    assert scoped[0, 0] != scoped[1, 0]


def test_lsh_shape_given_or_derived():
    assert MinHashConfig().lsh_shape() == (28, 4)
    bands, rows = MinHashConfig(bands=None, rows=None, target_jaccard=0.8, num_perm=128).lsh_shape()
    assert bands * rows <= 128 and (1 / bands) ** (1 / rows) == pytest.approx(0.8, abs=0.1)
    with pytest.raises(ValidationError, match="bands and rows"):
        MinHashConfig(bands=10, rows=None)
    with pytest.raises(ValidationError, match="target_jaccard"):
        MinHashConfig(target_jaccard=0.8)


def test_star_edges_join_each_group_to_its_smallest_document():
    keys = np.array([7, 7, 7, 9, 5, 5], np.int64)
    docs = np.array([30, 10, 20, 40, 60, 50], np.int64)
    edges = star_edges(keys, docs)
    assert sorted(zip(edges.column("a").to_pylist(), edges.column("b").to_pylist())) == [(20, 10), (30, 10), (60, 50)]


def test_candidate_pairs_all_pairs_then_chain_and_star():
    keys = np.array([1, 1, 1, 2], np.int64)
    left, right = candidate_pairs(keys, np.array([3, 1, 2, 4], np.int64), max_group_pairs=8)
    assert sorted(zip(left.tolist(), right.tolist())) == [(1, 2), (1, 3), (2, 3)]
    group = np.arange(100, dtype=np.int64)
    left, right = candidate_pairs(np.zeros(100, np.int64), group, max_group_pairs=8)
    assert left.size == 2 * 100 - 3 and (left < right).all()


def test_keep_policies_rank_copies():
    copies = [("b", "2024-05-01T00:00:00Z", 10), ("a", "2024-05-01T00:00:00Z", 10), ("c", "2023-01-01T00:00:00Z", 99),
              ("d", "", 5)]
    best = {policy: min(copies, key=lambda c: rank_key(policy, *c))[0]
            for policy in ("first_seen", "newest", "longest")}
    assert best == {"first_seen": "c", "newest": "a", "longest": "c"}


def test_lines_normalize_as_each_line_alone():
    text = "  Menu \u00a0 HOME\n\n© 2019 ACME, Inc.\nİstanbul ŞEHİR\t12"
    config = TextNormalization(digits_to_zero=True)
    assert normalize_lines(text, config) == [normalize_text(line, config) for line in text.split("\n")]
