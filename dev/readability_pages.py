"""mozilla/readability's test pages (shared data, PROVENANCE.md 4b) as a labelled set: each page's gold text is
readability.js's expected output; its `with` snippets are the expected output's paragraphs and its `without`
snippets the whole page's lines readability left out (benchmarks/extraction_quality.py's METRIC says how). Split
by site into halves: the block selector trains on one (dev/block_selector.py), the benchmarks score the other."""
from __future__ import annotations

import gzip
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from dev.gold_pages import Page, decode, normalise

READABILITY_SNIPPET_TAGS = ("p", "li", "pre", "h1", "h2", "h3", "h4", "h5", "h6")
NESTED_SNIPPET_SELECTOR = ", ".join(READABILITY_SNIPPET_TAGS)
MIN_WITH_WORDS = 4
MIN_WITHOUT_WORDS = 5
_CASE_NUMBER = re.compile(r"-\d+$")      # "ars-1", "ars-2": two pages of one site


@dataclass
class ReadabilityPage(Page):
    """A readability test page with its expected output's text as gold."""

    main_content: str

    @property
    def site(self) -> str:
        """The test case's name without its number: the pages carry no URL."""
        return _CASE_NUMBER.sub("", self.name)


def load_readability(folder: Path) -> list[ReadabilityPage]:
    pages = []
    for case in sorted(path for path in folder.iterdir() if (path / "source.html.gz").exists()):
        html = decode(gzip.decompress((case / "source.html.gz").read_bytes()))
        expected = decode(gzip.decompress((case / "expected.html.gz").read_bytes()))
        metadata = json.loads((case / "expected-metadata.json").read_text(encoding="utf-8"))
        pages.append(ReadabilityPage(case.name, html, "", _expected_paragraphs(expected),  # the pages have no URL
                                     _lines_readability_left_out(html, expected, metadata),
                                     extract_plain_text(expected)))
    return pages


def heldout_half(pages: list[ReadabilityPage], heldout: bool = True) -> list[ReadabilityPage]:
    """The pages of the held-out half of the sites (a site's hash odd), or with heldout=False the training half."""
    return [page for page in pages if (int(hashlib.sha256(page.site.encode()).hexdigest(), 16) % 2 == 1) == heldout]


def _expected_paragraphs(expected_html: str) -> list[str]:
    body = HTMLTree.parse(expected_html).body
    if body is None:
        return []
    snippets = []
    for tag in READABILITY_SNIPPET_TAGS:
        for element in body.get_elements_by_tag_name(tag):
            # Whether alt text belongs to a paragraph is a configuration choice (alt_texts), not gold.
            if element.query_selector(NESTED_SNIPPET_SELECTOR) or element.query_selector("img"):
                continue
            text = normalise(extract_plain_text(element.html, list_bullets=False))
            if len(text.split()) >= MIN_WITH_WORDS:
                snippets.append(text)
    return snippets


def _lines_readability_left_out(html: str, expected_html: str, metadata: dict) -> list[str]:
    kept_by_readability = normalise(extract_plain_text(expected_html))
    described = normalise(" | ".join(str(metadata.get(key) or "")
                                     for key in ("title", "byline", "excerpt", "siteName")))
    lines = {normalise(line) for line in extract_plain_text(html).split("\n")}
    return sorted(line for line in lines if len(line.split()) >= MIN_WITHOUT_WORDS
                  and line not in kept_by_readability and line not in described)
