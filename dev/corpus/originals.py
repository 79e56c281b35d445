"""Ordinary pages: real pages served as crawled, and new articles written into real sites' templates."""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

from dev.corpus.captures import Capture, observed_charset
from dev.corpus.charsets import CharsetFacts, strip_charset_declarations, with_meta_charset
from dev.corpus.context import BuildContext
from dev.corpus.html_edit import transplant
from dev.corpus.similarity import jaccard, main_text, shared, shingles
from dev.corpus.sources import SourcePage
from dev.corpus.urls import slug

REFERENCE_LANGUAGE = "en"             # all reference texts are English
ARTICLE_WORDS = (200, 600)
MAX_TEMPLATE_OVERLAP = 0.2            # the old article's leftovers must not make the page a near-duplicate
MIN_PASSAGE_RECALL = 0.6              # and the extractor must really find the new article
MAX_TRANSPLANT_ATTEMPTS = 50
HEADLINE_WORDS = 9


def source_original(page: SourcePage, ctx: BuildContext, kind: str = "original") -> Capture:
    """A real page as its server sent it; the HTTP header names its real charset or none."""
    body = page.html_bytes()
    facts = observed_charset(body, None)
    http_charset = None
    if facts.actual and ctx.rng.random() < 0.7:
        http_charset = ctx.rng.choice(("UTF-8", "utf-8")) if facts.actual == "utf-8" else facts.actual.upper()
    return Capture(kind=kind, url=page.url, status=200, body=body, content_type="text/html",
                   charset=CharsetFacts(http_charset, facts.meta, facts.actual, facts.invalid_bytes),
                   variant="source_page", source_page=page.source_id, lang=page.lang)


def transplanted_original(ctx: BuildContext) -> Capture:
    """A new article (reference text) in a real page's template, at a fresh URL on that page's site."""
    for _ in range(MAX_TRANSPLANT_ATTEMPTS):
        template = ctx.templates.next()
        passage = ctx.pool.take(ctx.rng.randint(*ARTICLE_WORDS))
        title = headline(passage.paragraphs[0])
        page = transplant(template.html, template.article_slots, passage.paragraphs, title)
        page = with_meta_charset(strip_charset_declarations(page), "utf-8")
        text = shingles(main_text(page))
        written = shingles(" ".join(passage.paragraphs))
        if (jaccard(text, shingles(template.text)) > MAX_TEMPLATE_OVERLAP
                or shared(text, written) < MIN_PASSAGE_RECALL * written.size):
            continue
        url = ctx.urls.first_free(_article_urls(template.source.url, title))
        body = page.encode("utf-8")
        return Capture(kind="original", url=url, status=200, body=body, content_type="text/html",
                       charset=observed_charset(body, ctx.rng.choice(("UTF-8", "utf-8", None))),
                       variant="transplanted_article", source_page=template.source.source_id,
                       body_source=passage.source, lang=REFERENCE_LANGUAGE)
    raise RuntimeError("no page template took a transplanted article; the source pages are unusable")


def headline(paragraph: str) -> str:
    """A title made of the paragraph's first words, up to the end of its first sentence."""
    first_sentence = re.split(r"(?<=[.!?;:])\s", paragraph, maxsplit=1)[0]
    return " ".join(first_sentence.split()[:HEADLINE_WORDS]).rstrip(",.;:!?\"'")


def _article_urls(template_url: str, title: str) -> Iterator[str]:
    """The template's URL with its last path segment replaced by the new title's slug, then numbered."""
    parts = urlsplit(template_url)
    directory, _, last = parts.path.rstrip("/").rpartition("/")
    suffix = "/" if parts.path.endswith("/") else (".html" if last.endswith((".html", ".htm")) else "")
    for number in itertools.count(1):
        name = slug(title) + (f"-{number}" if number > 1 else "")
        yield urlunsplit((parts.scheme, parts.netloc, f"{directory}/{name}{suffix}", "", ""))
