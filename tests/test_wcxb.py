"""WCXB's word F1 against hand computations, and the fixed held-out split (dev/wcxb.py)."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from dev.wcxb import HELDOUT, PAGE_TYPES, TRAIN, has_gold, load_wcxb, read_labels, site_of, snippets, splits, word_f1

# page type -> (training pages, held-out pages), all 1,497 pages of the staged dev split
SPLIT_COUNTS = {"article": (545, 245), "forum": (80, 33), "product": (82, 36), "collection": (85, 31),
                "listing": (69, 32), "documentation": (60, 31), "service": (115, 53)}


@pytest.fixture(scope="module")
def wcxb_dir(data_dir):
    folder = data_dir / "html" / "wcxb"
    if not (folder / "metadata.json").exists():
        pytest.skip(f"WCXB is not staged at {folder} (shared data, PROVENANCE.md section 9)")
    return folder


@pytest.mark.parametrize("extracted, gold, f1", [
    # tokens the,cat,sat,on,the,mat against the,cat,the,dog: overlap the x2 + cat = 3; P 3/6, R 3/4
    ("The cat sat on the mat.", "the cat, the dog!", 2 * 0.5 * 0.75 / 1.25),
    ("a a a", "a", 2 * (1 / 3) * 1 / (4 / 3)),          # a repeated word counts once per gold occurrence
    ("HELLO, World...", "hello world", 1.0),           # case and punctuation do not count
    ("don't-stop", "don t stop", 1.0),                  # \w+ splits at the apostrophe and the hyphen
    ("Café ÜBER naïve", "café über naïve", 1.0),        # \w is Unicode
    ("", "some gold text", 0.0),
    ("other words", "some gold text", 0.0),
    ("", "", 1.0),                                      # WCXB's convention for a gold without words
    ("text", "...", 0.0),
])
def test_word_f1_is_the_hand_computation(extracted, gold, f1):
    assert word_f1(extracted, gold) == pytest.approx(f1)


def test_snippet_lists_are_parsed_whether_stored_as_lists_or_as_their_repr():
    assert snippets(["a  b\nc", "d"]) == ["a b c", "d"]
    assert snippets("['a b', 'c']") == ["a b", "c"]
    assert snippets("[Official thread] 2024 election") == ["[Official thread] 2024 election"]
    assert snippets(None) == []


def test_a_site_is_the_domain_without_its_subdomains():
    assert site_of("forums.FreeBSD.org") == "freebsd.org"
    assert site_of("unix.stackexchange.com") == "stackexchange.com"
    assert site_of("www.bbc.co.uk") == "bbc.co.uk"
    assert site_of("example.de") == "example.de"
    assert site_of("") == ""


def test_the_split_is_fixed_and_keeps_every_site_on_one_side(wcxb_dir):
    labels = read_labels(wcxb_dir)
    split_of = splits(labels)
    counts = Counter((label.page_type, split_of[label.file_id]) for label in labels)
    assert {page_type: (counts[page_type, TRAIN], counts[page_type, HELDOUT]) for page_type in PAGE_TYPES} \
        == SPLIT_COUNTS
    sides_of_site = {}
    for label in labels:
        sides_of_site.setdefault(site_of(label.domain), set()).add(split_of[label.file_id])
    assert all(len(sides) == 1 for sides in sides_of_site.values())
    shuffled = random.Random(0).sample(labels, len(labels))
    assert splits(shuffled) == split_of      # a function of the labels, not of their order


def test_the_loader_reads_every_page_with_its_gold(wcxb_dir):
    pages = load_wcxb(wcxb_dir)
    assert len(pages) == 1497 and sum(not has_gold(page) for page in pages) == 21
    first = pages[0]
    assert (first.name, first.domain, first.page_type) == ("0001", "scratchculinary.com", "article")
    assert first.url.startswith("https://scratchculinary.com/") and "<html" in first.html.lower()
    assert first.with_snippets
    assert first.without_snippets == ["Home", "Login", "Order Now", "Chef's Choice Menu Previews"]
    assert first.main_content.startswith("Fall isn't just pumpkin spice season")
