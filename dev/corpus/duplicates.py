"""Exact and near duplicates of originals, each cluster labelled with one dup_cluster id."""
from __future__ import annotations

import itertools
from collections.abc import Iterator

from dev.corpus.captures import Capture, observed_charset
from dev.corpus.context import BuildContext
from dev.corpus.near_duplicates import TARGETS, ChromeContext, make_near_duplicate
from dev.corpus.similarity import main_text
from dev.corpus.urls import (amp_copy, host_of, mirror_copy, mobile_copy, print_copy, scheme_swapped,
                               tracking_copy, www_toggled)

EXACT_STYLES = ("recrawl", "tracking_query", "other_scheme", "other_www", "mobile_host", "mirror_site")
NEAR_STYLES = ("updated_recrawl", "amp_page", "print_page", "mirror_site")
COPIES_PER_ORIGINAL = (1, 1, 1, 2, 3)
MIN_NEAR_DUP_WORDS = 150          # shorter articles cannot be edited to a precise similarity


class Clusters:
    """Cluster ids, handed to an original when it gets its first copy."""

    def __init__(self):
        self._numbers = itertools.count(1)

    def of(self, original: Capture) -> str:
        if original.dup_cluster is None:
            original.dup_cluster = f"dup-{next(self._numbers):05d}"
        return original.dup_cluster


def exact_duplicates(originals: list[Capture], count: int, ctx: BuildContext, clusters: Clusters) -> list[Capture]:
    """Byte-identical payloads: the same URL fetched again later, or the same page at other addresses."""
    copies: list[Capture] = []
    while len(copies) < count:
        original = ctx.rng.choice(originals)
        for _ in range(min(ctx.rng.choice(COPIES_PER_ORIGINAL), count - len(copies))):
            style = ctx.rng.choice(EXACT_STYLES)
            url = original.url if style == "recrawl" else ctx.urls.first_free(_exact_urls(original.url, style, ctx))
            copies.append(Capture(
                kind="exact_dup", url=url, status=200, body=original.body, content_type=original.content_type,
                charset=original.charset, variant=style, source_page=original.source_page,
                body_source=original.body_source, lang=original.lang, dup_cluster=clusters.of(original),
                target_jaccard=1.0, measured_jaccard=1.0, copy_of=original,
                recrawl_of=original if style == "recrawl" else None))
    return copies


def near_duplicates(originals: list[Capture], count: int, ctx: BuildContext, clusters: Clusters) -> list[Capture]:
    """Edited copies at the Jaccard targets in turn, from originals with enough UTF-8 article text."""
    copies: list[Capture] = []
    targets = itertools.cycle(TARGETS)
    for original in ctx.rng.sample(originals, len(originals)):
        if len(copies) == count:
            break
        try:
            page = original.body.decode("utf-8")
        except UnicodeDecodeError:
            continue
        text = main_text(page)
        if len(text.split()) < MIN_NEAR_DUP_WORDS:
            continue
        chrome = ChromeContext(original.lang, host_of(original.url), ctx.crawl_year)
        for _ in range(min(ctx.rng.choice(COPIES_PER_ORIGINAL), count - len(copies))):
            target = next(targets)
            variant = make_near_duplicate(page, text, target, ctx.rng, ctx.pool, chrome)
            if variant is None:
                break
            style = ctx.rng.choice(NEAR_STYLES)
            url = original.url if style == "updated_recrawl" else ctx.urls.first_free(
                _near_urls(original.url, style, ctx))
            body = variant.page.encode("utf-8")
            copies.append(Capture(
                kind="near_dup", url=url, status=200, body=body, content_type="text/html",
                charset=observed_charset(body, original.charset.http), variant=f"{variant.recipe}/{style}",
                source_page=original.source_page, body_source=original.body_source, lang=original.lang,
                dup_cluster=clusters.of(original), target_jaccard=target, measured_jaccard=variant.measured,
                recrawl_of=original if style == "updated_recrawl" else None))
    if len(copies) < count:
        raise RuntimeError(f"only {len(copies)} of {count} near-duplicates could be made")
    return copies


def _exact_urls(url: str, style: str, ctx: BuildContext) -> Iterator[str]:
    styled = {"tracking_query": lambda: tracking_copy(url, ctx.rng), "other_scheme": lambda: scheme_swapped(url),
              "other_www": lambda: www_toggled(url), "mobile_host": lambda: mobile_copy(url)}
    if style in styled:
        yield styled[style]()
    while True:     # taken already (or a mirror was asked for): a scraper site copied it
        yield mirror_copy(url, ctx.rng)


def _near_urls(url: str, style: str, ctx: BuildContext) -> Iterator[str]:
    if style == "amp_page":
        yield amp_copy(url)
    elif style == "print_page":
        yield print_copy(url)
    while True:
        yield mirror_copy(url, ctx.rng)
