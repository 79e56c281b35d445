"""Every capture of a corpus, kind by kind, in the order that re-crawls and copies need (originals first)."""
from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from dev.corpus.captures import Capture
from dev.corpus.charsets import TRAPS, has_non_western_charset
from dev.corpus.context import BuildContext, decoded
from dev.corpus.duplicates import Clusters, exact_duplicates, near_duplicates
from dev.corpus.http_outcomes import (IMAGE_EXTENSIONS, NON_HTML_VARIANTS, SERVER_ERROR_VARIANTS, non_html_capture,
                                        not_found_capture, redirect_capture, server_error_capture)
from dev.corpus.originals import source_original, transplanted_original
from dev.corpus.plan import MIN_TRANSPLANT_SHARE, CorpusPlan
from dev.corpus.real_captures import real_captures
from dev.corpus.real_records import RealResponse
from dev.corpus.sources import SourcePage
from dev.corpus.traps import BOILERPLATE_VARIANTS, SPAM_VARIANTS, bad_charset_page, boilerplate_heavy_page, spam_page


@dataclass(frozen=True)
class ReservedPages:
    """Source pages that appear once only, so their text is never an unlabelled duplicate."""
    bad_charset: list[tuple[SourcePage, str]]
    truncated_tail: SourcePage
    originals: list[SourcePage]

    @property
    def used_once(self) -> set[str]:
        return {page.source_id for page, _ in self.bad_charset} | {self.truncated_tail.source_id}


def reserve_pages(pages: Sequence[SourcePage], plan: CorpusPlan, rng: random.Random) -> ReservedPages:
    counts = plan.kind_counts()
    order = rng.sample(pages, len(pages))
    # Half of the charset traps go to languages with non-Western legacy charsets (Shift_JIS, GBK, KOI8-R,
    # windows-1250), which a random draw from these mostly German and English pages would almost never hit.
    bad_charset = _utf8_pages(order, math.ceil(counts["bad_charset"] / 2), lambda p: has_non_western_charset(p.lang))
    bad_charset += _utf8_pages(order, counts["bad_charset"] - len(bad_charset), lambda p: True)
    truncated_tail = order.pop()
    transplants = max(math.ceil(MIN_TRANSPLANT_SHARE * counts["original"]), counts["original"] - len(order))
    return ReservedPages(bad_charset, truncated_tail, order[:counts["original"] - transplants])


def _utf8_pages(order: list[SourcePage], count: int, wanted) -> list[tuple[SourcePage, str]]:
    """Take up to `count` UTF-8 pages that satisfy `wanted` out of `order`, with their text."""
    taken = []
    for page in list(order):
        if len(taken) == count:
            break
        html = decoded(page) if wanted(page) else None
        if html is not None:
            order.remove(page)
            taken.append((page, html))
    return taken


def assemble(plan: CorpusPlan, reserved: ReservedPages, real: Sequence[RealResponse],
             ctx: BuildContext) -> tuple[list[Capture], Capture]:
    """All captures in dependency order, and the capture whose response the last shard cuts off."""
    counts = plan.kind_counts()
    for page in [*reserved.originals, *(page for page, _ in reserved.bad_charset), reserved.truncated_tail]:
        ctx.urls.claim(page.url)
    originals = [source_original(page, ctx) for page in reserved.originals]
    originals += [transplanted_original(ctx) for _ in range(counts["original"] - len(originals))]
    clusters = Clusters()
    captures = [*originals,
                *exact_duplicates(originals, counts["exact_dup"], ctx, clusters),
                *near_duplicates(originals, counts["near_dup"], ctx, clusters)]
    captures += [spam_page(SPAM_VARIANTS[i % len(SPAM_VARIANTS)], ctx) for i in range(counts["spam"])]
    captures += [boilerplate_heavy_page(BOILERPLATE_VARIANTS[i % len(BOILERPLATE_VARIANTS)], ctx)
                 for i in range(counts["boilerplate_heavy"])]
    captures += [bad_charset_page(page, html, TRAPS[i % len(TRAPS)], ctx)
                 for i, (page, html) in enumerate(reserved.bad_charset)]
    images = [r for r in real if r.http.status == 200 and r.http.mime_type in IMAGE_EXTENSIONS]
    captures += [non_html_capture(NON_HTML_VARIANTS[i % len(NON_HTML_VARIANTS)], originals, images, ctx)
                 for i in range(counts["non_html"])]
    captures += [redirect_capture(ctx.rng.choice(originals), ctx) for _ in range(counts["redirect"])]
    captures += [not_found_capture(originals, ctx) for _ in range(counts["not_found"])]
    captures += [server_error_capture(SERVER_ERROR_VARIANTS[i % len(SERVER_ERROR_VARIANTS)], originals, ctx)
                 for i in range(counts["server_error"])]
    captures += real_captures(real, plan.real_records, ctx.rng)
    tail = source_original(reserved.truncated_tail, ctx, kind="truncated")
    tail.truncated = True
    return captures, tail
