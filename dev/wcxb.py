"""WCXB (the Web Content eXtraction Benchmark, dev split; shared data `html/wcxb/`, PROVENANCE.md section 9):
1,497 labelled pages of seven types, their metric, and this project's fixed held-out split of them.

The metric is the benchmark's own, matched to `word_f1` / `tokenize` in its `evaluate.py`
(Murrough-Foley/web-content-extraction-benchmark@c039d5e): word-multiset F1 of `\\w+` tokens of the lower-cased
texts against `ground_truth.main_content`. Python's `re` on `str` is Unicode-aware there as here, so non-Latin
words count the same. Differences from their script, all outside `word_f1` itself:
- Pages whose gold has no token are left out of the averages and counted (`has_gold`); their script keeps them,
  scoring 1.0 for an empty extraction and 0.0 otherwise.
- The page type is `metadata.json`'s; their script reads the ground truth's `_internal.page_type.primary`
  (5 of 1,497 pages differ, e.g. article there, service here).
- HTML is decoded as the other gold sets are (resiliparse's encoding detection); their example reads UTF-8.
- Snippets are whitespace-normalised (`dev.gold_pages.normalise`); the benchmark scores them per page,
  case-insensitively, and averages pages (the extraction benchmark pools them, case-sensitively, as for its other
  gold sets).

The split holds out whole sites, fixed before anything is tuned on these pages: a page's site is its domain
without subdomains (`site_of`), so e.g. the four stackexchange.com forums and the 17 substack.com blogs each stay
on one side. Sites are stratified by their page type (the type most of their pages have) and, within each
stratum, taken in the order of the SHA-256 of their name until HELDOUT_SHARE of the stratum's pages are held
out. A plain hash bucket left too few product pages out (24); the stratified rule holds out 25+ of every type.
"""
from __future__ import annotations

import ast
import gzip
import hashlib
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from dev.gold_pages import Page, decode, normalise

HELDOUT_SHARE = 0.3
TRAIN, HELDOUT = "train", "heldout"
PAGE_TYPES = ("article", "forum", "product", "collection", "listing", "documentation", "service")  # their order
# second-level labels under a two-letter country code that are not a site of their own (bbc.co.uk, gov.au)
COUNTRY_SECOND_LEVELS = frozenset({"ac", "co", "com", "edu", "gov", "ne", "net", "or", "org", "go"})
_WORD = re.compile(r"\w+")


@dataclass
class WcxbPage(Page):
    """A WCXB page (`name` is its file id, e.g. "0001") with its gold main text and its side of the split."""

    domain: str
    page_type: str
    main_content: str
    split: str

    @property
    def site(self) -> str:
        return site_of(self.domain)


@dataclass(frozen=True)
class PageLabel:
    """What metadata.json says about a page: enough to place it in the split without reading its HTML."""

    file_id: str
    domain: str
    page_type: str


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def word_f1(extracted: str, gold: str) -> float:
    """WCXB's word F1: the harmonic mean of the shares of `extracted`'s and `gold`'s word tokens (as multisets) in
    their overlap. A gold without tokens scores 1.0 against an empty extraction and 0.0 otherwise (as theirs)."""
    return overlap_f1(Counter(tokens(extracted)), Counter(tokens(gold)))


def overlap_f1(found: Counter, wanted: Counter) -> float:
    """word_f1 of the extracted text's and the gold's token counts (a gold counted once, scored many times)."""
    if not wanted or not found:
        return float(not wanted and not found)
    overlap = sum((found & wanted).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / found.total(), overlap / wanted.total()
    return 2 * precision * recall / (precision + recall)


def has_gold(page: WcxbPage) -> bool:
    """Whether the page is scored: its gold main text has a word (21 pages of the dev split have none)."""
    return bool(_WORD.search(page.main_content))


def site_of(domain: str) -> str:
    """The domain without its subdomains: its last two labels, three under a country code's second level."""
    labels = domain.lower().split(".")
    kept = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in COUNTRY_SECOND_LEVELS else 2
    return ".".join(labels[-kept:])


def read_labels(folder: Path) -> list[PageLabel]:
    files = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))["files"]
    return [PageLabel(file_id, entry["domain"], entry["page_type"]) for file_id, entry in sorted(files.items())]


def heldout_sites(labels: list[PageLabel]) -> frozenset[str]:
    """The sites held out (see the module's docstring); a function of the domains and page types alone."""
    pages_of_site: dict[str, list[str]] = defaultdict(list)
    for label in labels:
        pages_of_site[site_of(label.domain)].append(label.page_type)
    strata: dict[str, list[str]] = defaultdict(list)
    for site, types in pages_of_site.items():
        # the most common type; a tie goes to the alphabetically first
        strata[min(Counter(types).items(), key=lambda item: (-item[1], item[0]))[0]].append(site)
    heldout = set()
    for sites in strata.values():
        wanted, taken = HELDOUT_SHARE * sum(len(pages_of_site[site]) for site in sites), 0
        for site in sorted(sites, key=lambda name: hashlib.sha256(name.encode()).hexdigest()):
            if taken >= wanted:
                break
            heldout.add(site)
            taken += len(pages_of_site[site])
    return frozenset(heldout)


def splits(labels: list[PageLabel]) -> dict[str, str]:
    """file id -> TRAIN or HELDOUT."""
    heldout = heldout_sites(labels)
    return {label.file_id: HELDOUT if site_of(label.domain) in heldout else TRAIN for label in labels}


def snippets(value: object) -> list[str]:
    """A ground truth's `with` / `without` list, whitespace-normalised. The staged files store JSON lists; a list
    written as its Python repr (as some WCXB tooling did) is parsed as a literal, any other string is one snippet."""
    if isinstance(value, str):
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed = value
        value = parsed if isinstance(parsed, list) else [value]
    return [normalise(str(snippet)) for snippet in value or []]


def load_wcxb(folder: Path) -> list[WcxbPage]:
    """Every page of the staged dev split, in file-id order (pages without gold included: see `has_gold`)."""
    labels = read_labels(folder)
    split_of = splits(labels)
    pages = []
    for label in labels:
        record = json.loads((folder / "ground-truth" / f"{label.file_id}.json").read_text(encoding="utf-8"))
        gold = record["ground_truth"]
        html = decode(gzip.decompress((folder / "html" / f"{label.file_id}.html.gz").read_bytes()))
        pages.append(WcxbPage(label.file_id, html, record.get("url") or "", snippets(gold.get("with")),
                              snippets(gold.get("without")), label.domain, label.page_type,
                              gold.get("main_content") or "", split_of[label.file_id]))
    return pages


def train_pages(pages: list[WcxbPage]) -> list[WcxbPage]:
    return [page for page in pages if page.split == TRAIN]


def heldout_pages(pages: list[WcxbPage]) -> list[WcxbPage]:
    return [page for page in pages if page.split == HELDOUT]
