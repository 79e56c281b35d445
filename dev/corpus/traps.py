"""HTML pages that are served fine but should not survive a good pipeline unchanged: spam, pages that are
mostly site chrome, and pages whose charset declarations lie."""
from __future__ import annotations

import re

from dev.corpus.boilerplate import chrome_dominated, listing_page, menu_topics
from dev.corpus.captures import Capture, observed_charset
from dev.corpus.charsets import reencode, strip_charset_declarations, with_meta_charset
from dev.corpus.context import BuildContext, Template
from dev.corpus.html_edit import vocabulary
from dev.corpus.originals import REFERENCE_LANGUAGE
from dev.corpus.sources import SourcePage
from dev.corpus.spam import KEYWORDS, SPAM_TLDS, keyword_stuffed, link_farm, word_salad
from dev.corpus.urls import numbered, slug, with_path

SPAM_VARIANTS = ("keyword_stuffed", "link_farm", "word_salad")
BOILERPLATE_VARIANTS = ("chrome_dominated", "listing_page")
TEASERS = (20, 40)
TEASER_WORDS = (5, 10)


def spam_page(variant: str, ctx: BuildContext) -> Capture:
    """Keyword stuffing and link farms live on throw-away domains; word salad on a hacked real site."""
    if variant == "link_farm":
        url = f"https://{_spam_host(ctx)}/"
        return _generated_html("spam", variant, ctx.urls.first_free(numbered(url)), link_farm(ctx.rng), None,
                               REFERENCE_LANGUAGE, ctx)
    template = ctx.templates.next()
    if variant == "keyword_stuffed":
        page = keyword_stuffed(template.html, template.article_slots, ctx.rng)
        url, lang = f"https://{_spam_host(ctx)}/{slug(ctx.rng.choice(KEYWORDS))}.html", REFERENCE_LANGUAGE
    else:
        page = word_salad(template.html, template.article_slots, ctx.rng)
        url = with_path(template.source.url, f"/{slug(ctx.rng.choice(KEYWORDS))}-{ctx.rng.randint(10, 9999)}/")
        lang = template.source.lang
    return _generated_html("spam", variant, ctx.urls.first_free(numbered(url)), page, template, lang, ctx)


def boilerplate_heavy_page(variant: str, ctx: BuildContext) -> Capture:
    template = ctx.templates.next()
    topics = menu_topics(vocabulary(template.article_slots)) or [template.host]
    if variant == "listing_page":
        page = listing_page(template.html, template.article_slots, _teasers(ctx), ctx.rng)
        path = f"/category/{slug(ctx.rng.choice(topics))}/"
    else:
        page = chrome_dominated(template.html, template.article_slots, template.source.lang, ctx.rng,
                                template.host, ctx.crawl_year, topics)
        path = f"/{slug(ctx.rng.choice(topics))}-{ctx.rng.randint(10, 9999)}/"
    url = ctx.urls.first_free(numbered(with_path(template.source.url, path)))
    return _generated_html("boilerplate_heavy", variant, url, page, template, template.source.lang, ctx)


def bad_charset_page(page: SourcePage, html: str, trap: str, ctx: BuildContext) -> Capture:
    """A real page served in a charset trap; the page is used for nothing else, so its text is no duplicate."""
    reencoded = reencode(html, page.lang, trap, ctx.rng)
    return Capture(kind="bad_charset", url=page.url, status=200, body=reencoded.body, content_type="text/html",
                   charset=reencoded.facts, variant=reencoded.variant, source_page=page.source_id, lang=page.lang)


def _generated_html(kind: str, variant: str, url: str, page: str, template: Template | None, lang: str | None,
                    ctx: BuildContext) -> Capture:
    body = with_meta_charset(strip_charset_declarations(page), "utf-8").encode("utf-8")
    return Capture(kind=kind, url=url, status=200, body=body, content_type="text/html",
                   charset=observed_charset(body, ctx.rng.choice(("UTF-8", None))), variant=variant,
                   source_page=template.source.source_id if template else None, lang=lang)


def _spam_host(ctx: BuildContext) -> str:
    return f"{slug(ctx.rng.choice(KEYWORDS))}-{ctx.rng.randint(1, 999)}.{ctx.rng.choice(SPAM_TLDS)}"


def _teasers(ctx: BuildContext) -> list[str]:
    sentences: list[str] = []
    wanted = ctx.rng.randint(*TEASERS)
    while len(sentences) < wanted:
        for paragraph in ctx.pool.take(200).paragraphs:
            sentences += [s for s in re.split(r"(?<=[.!?])\s", paragraph) if len(s.split()) >= TEASER_WORDS[0]]
    return [" ".join(s.split()[:ctx.rng.randint(*TEASER_WORDS)]).rstrip(",;:") for s in sentences[:wanted]]
