"""The real web pages the corpus is built from: trafilatura's evaluation pages and Mozilla Readability's test pages.

Every page gets the URL a crawler would have fetched it from: the manifest URL, else the page's own canonical
URL, else one derived from its name (`hard::` keys in the manifest, Readability fixture names). Two sources that resolve to the same URL are the same page saved twice
(a `hard::` copy of a manifest page, two Readability fixtures of one article), so only the first is kept; the
small hand-written Readability fixtures are dropped because they share their lorem-ipsum text with each other.
"""
from __future__ import annotations

import gzip
import html
import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dev.corpus.urls import crawlable, slug

TRAFILATURA_DIR = Path("html/trafilatura_eval")
READABILITY_DIR = Path("html/mozilla_readability")
MIN_READABILITY_FIXTURE_BYTES = 15_000   # below this the Readability pages are reduced unit-test fixtures
HEAD_BYTES = 262_144

CANONICAL_TAGS = (
    re.compile(rb"<link[^>]+rel=[\"']?canonical[\"']?[^>]*>", re.IGNORECASE),
    re.compile(rb"<meta[^>]+property=[\"']og:url[\"'][^>]*>", re.IGNORECASE),
)
TAG_URL_ATTRIBUTE = re.compile(rb"(?:href|content)=[\"']([^\"']+)[\"']", re.IGNORECASE)
HTML_LANG = re.compile(rb"<html[^>]*\slang=[\"']?([A-Za-z]{2,3})", re.IGNORECASE)
KEY_HOST = re.compile(r"^([a-z0-9-]+(?:\.[a-z]{2,3}){1,2}?)[.-](.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class SourcePage:
    source_id: str      # path under the data set's html/ folder, e.g. trafilatura_eval/pages/0000_x.html.gz
    url: str
    lang: str | None    # fastText label from the manifest, else the page's declared language
    path: Path

    def html_bytes(self) -> bytes:
        return _gunzip(self.path)


@lru_cache(maxsize=2)       # the page list is the same for every corpus generated from one data set
def load_source_pages(data_dir: Path) -> tuple[SourcePage, ...]:
    pages: list[SourcePage] = []
    seen_urls: set[str] = set()
    for page in [*_trafilatura_pages(data_dir), *_readability_pages(data_dir)]:
        if page.url not in seen_urls:
            seen_urls.add(page.url)
            pages.append(page)
    return tuple(pages)


def _trafilatura_pages(data_dir: Path) -> Iterator[SourcePage]:
    root = data_dir / TRAFILATURA_DIR
    for line in (root / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        path = root / entry["file"]
        url = entry["url"]
        if not url.startswith(("http://", "https://")):    # "hard::<name>" and "recall::<name>" keys, one typo
            name = url.split("::", 1)[-1].removesuffix(".html")
            url = _canonical_url(_gunzip_head(path)) or _url_from_key(name)
        yield SourcePage(f"{TRAFILATURA_DIR.name}/{entry['file']}", crawlable(url), entry["fasttext_lid176"], path)


def _readability_pages(data_dir: Path) -> Iterator[SourcePage]:
    root = data_dir / READABILITY_DIR
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        path = folder / "source.html.gz"
        head = _gunzip_head(path)
        if len(head) < MIN_READABILITY_FIXTURE_BYTES:
            continue
        metadata = json.loads((folder / "expected-metadata.json").read_text(encoding="utf-8"))
        url = _canonical_url(head) or _url_from_fixture_name(folder.name)
        source_id = f"{READABILITY_DIR.name}/{folder.name}/source.html.gz"
        yield SourcePage(source_id, crawlable(url), _language(metadata.get("lang"), head), path)


@lru_cache(maxsize=64)      # a page is often read again right away (as original, then as a copy's base)
def _gunzip(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def _gunzip_head(path: Path) -> bytes:
    """The start of the page, where the canonical link and the language are declared."""
    return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(path.read_bytes(), HEAD_BYTES)


def _language(declared: str | None, raw: bytes) -> str | None:
    if declared:
        return declared.split("-")[0].lower()
    match = HTML_LANG.search(raw[:4096])
    return match.group(1).decode("ascii").lower() if match else None


def _canonical_url(raw: bytes) -> str | None:
    """The page's canonical or og:url, if it names an article (a bare host or relative path does not count)."""
    for tag_pattern in CANONICAL_TAGS:
        tag = tag_pattern.search(raw)
        attribute = TAG_URL_ATTRIBUTE.search(tag.group(0)) if tag else None
        if attribute is None:
            continue
        url = html.unescape(attribute.group(1).decode("utf-8", "replace")).strip()
        if url.startswith("//"):
            url = "https:" + url
        match = re.match(r"^https?://[^/\s]+\.[^/\s]+(/\S*)$", url)
        if match and len(match.group(1)) > 1:
            return url
    return None


def _url_from_key(name: str) -> str:
    """`iwr.de.IWR-Pressedienst` -> https://www.iwr.de/iwr-pressedienst/ (host, then the rest as a path)."""
    match = KEY_HOST.match(name)
    if match is None:
        return _url_from_fixture_name(name)
    host, rest = match.groups()
    return f"https://www.{host.lower()}/{slug(rest, max_words=20)}/"


def _url_from_fixture_name(name: str) -> str:
    """`daringfireball-1` -> https://www.daringfireball.com/articles/daringfireball-1/."""
    brand = re.sub(r"-\d+$", "", name).replace("-", "")
    return f"https://www.{brand.lower()}.com/articles/{slug(name, max_words=20)}/"
