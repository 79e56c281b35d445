"""Fetches that give no HTML document: other content types, redirects, missing pages and server errors."""
from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

from dev.corpus.captures import NO_CHARSET, Capture, observed_charset
from dev.corpus.charsets import CharsetFacts, strip_charset_declarations, with_meta_charset
from dev.corpus.context import BuildContext
from dev.corpus.error_pages import (cdn_error_page, maintenance_page, redirect_body, server_error_page,
                                      themed_not_found, wordpress_critical_error)
from dev.corpus.non_html import json_post, pdf_document, plain_text, robots_txt, rss_feed
from dev.corpus.originals import headline
from dev.corpus.real_records import RealResponse
from dev.corpus.urls import host_of, numbered, scheme_swapped, slug, with_path, www_toggled

NON_HTML_VARIANTS = ("image", "pdf", "json", "rss", "plain_text", "robots_txt")
SERVER_ERROR_VARIANTS = ("server_500", "wordpress_500", "bad_gateway_502", "maintenance_503",
                         "gateway_timeout_504", "cdn_52x")
REDIRECT_STATUSES = (301, 301, 301, 302, 302, 307, 308)
PASSAGE_WORDS = {"pdf": 200, "json": 40, "rss": 300, "plain_text": 300}
IMAGE_EXTENSIONS = {"image/gif": "gif", "image/jpeg": "jpg", "image/png": "png"}
UTF8_TEXT = CharsetFacts("utf-8", None, "utf-8", False)


def non_html_capture(variant: str, sites: list[Capture], images: list[RealResponse], ctx: BuildContext) -> Capture:
    if variant == "image":
        return _image(ctx.rng.choice(sites), ctx.rng.choice(images), ctx)
    if variant == "robots_txt":
        for site in ctx.rng.sample(sites, len(sites)):
            url = with_path(site.url, "/robots.txt")
            if ctx.urls.claim(url):
                return _capture("non_html", variant, url, robots_txt(host_of(url)), "text/plain", UTF8_TEXT)
        variant = "plain_text"     # every site has its robots.txt already
    site = ctx.rng.choice(sites)
    passage = ctx.pool.take(PASSAGE_WORDS[variant])
    title = headline(passage.paragraphs[0])
    if variant == "pdf":
        path, body, mime = f"/files/{slug(title)}.pdf", pdf_document(title, passage.paragraphs), "application/pdf"
    elif variant == "json":
        post_id = ctx.rng.randint(100, 99_999)
        published = datetime(ctx.crawl_year, 1, 1, tzinfo=timezone.utc) - timedelta(days=ctx.rng.randint(0, 2000))
        excerpt = " ".join(passage.paragraphs[0].split()[:40])
        path, mime = f"/wp-json/wp/v2/posts/{post_id}", "application/json"
        body = json_post(post_id, title, with_path(site.url, f"/{slug(title)}/"), published, excerpt)
    elif variant == "rss":
        titles = [headline(paragraph) for paragraph in passage.paragraphs]
        items = [(t, with_path(site.url, f"/{slug(t)}/"), " ".join(p.split()[:30]))
                 for t, p in zip(titles, passage.paragraphs)]
        built = datetime(ctx.crawl_year, 1, 1, tzinfo=timezone.utc) + timedelta(days=ctx.rng.randint(0, 120))
        path, body, mime = "/feed/", rss_feed(host_of(site.url), items, built), "application/rss+xml"
    else:
        path, body, mime = f"/downloads/{slug(title)}.txt", plain_text(title, passage.paragraphs), "text/plain"
    url = ctx.urls.first_free(numbered(with_path(site.url, path)))
    charset = NO_CHARSET if variant == "pdf" else UTF8_TEXT
    return _capture("non_html", variant, url, body, mime, charset, body_source=passage.source)


def _image(site: Capture, image: RealResponse, ctx: BuildContext) -> Capture:
    """A real image from the real crawls, as an upload on one of the corpus's sites."""
    name = image.url.rstrip("/").rsplit("/", 1)[-1].split("?")[0]
    year, month = ctx.crawl_year - ctx.rng.randint(0, 6), ctx.rng.randint(1, 12)
    extension = IMAGE_EXTENSIONS[image.http.mime_type]
    path = f"/wp-content/uploads/{year}/{month:02d}/{slug(name.rsplit('.', 1)[0])}.{extension}"
    return _capture("non_html", "image", ctx.urls.first_free(numbered(with_path(site.url, path))),
                    image.http.body, image.http.mime_type, source_page=f"{image.warc}#{image.record_id}")


def redirect_capture(target: Capture, ctx: BuildContext) -> Capture:
    """A redirect from another address of `target` (old scheme, other host name, old or short link)."""
    status = ctx.rng.choice(REDIRECT_STATUSES)
    url = ctx.urls.first_free(_redirect_sources(target.url, ctx))
    server = ctx.profiles.of(host_of(url)).server
    body = redirect_body(status, target.url, server).encode("ascii")
    return _capture("redirect", str(status), url, body, "text/html" if body else None,
                    status=status, extra_headers=(("Location", target.url),), source_page=target.source_page)


def not_found_capture(sites: list[Capture], ctx: BuildContext) -> Capture:
    """A dead link: half of them get the site's themed 404 page, the others the server's default one."""
    status = 410 if ctx.rng.random() < 0.1 else 404
    if ctx.rng.random() < 0.5:
        template = ctx.templates.next()
        url = ctx.urls.first_free(_dead_links(template.source.url, ctx))
        page = themed_not_found(template.html, template.article_slots, template.source.lang)
        page = with_meta_charset(strip_charset_declarations(page), "utf-8")
        return _error_page("not_found", f"{status}_themed", url, page, status,
                           source_page=template.source.source_id, lang=template.source.lang)
    url = ctx.urls.first_free(_dead_links(ctx.rng.choice(sites).url, ctx))
    page = server_error_page(status, ctx.profiles.of(host_of(url)).server, host_of(url))
    return _error_page("not_found", f"{status}_server_default", url, page, status)


def server_error_capture(variant: str, sites: list[Capture], ctx: BuildContext) -> Capture:
    url = ctx.urls.first_free(_dead_links(ctx.rng.choice(sites).url, ctx))
    host = host_of(url)
    if variant == "wordpress_500":
        return _error_page("server_error", variant, url, wordpress_critical_error(), 500)
    if variant == "maintenance_503":
        retry_after = str(ctx.rng.choice((600, 1800, 3600)))
        return _error_page("server_error", variant, url, maintenance_page(host), 503,
                           extra_headers=(("Retry-After", retry_after),))
    if variant == "cdn_52x":
        status = ctx.rng.choice((520, 521, 522))
        return _error_page("server_error", variant, url, cdn_error_page(status, host, ctx.rng), status,
                           server="cloudflare")
    status = {"server_500": 500, "bad_gateway_502": 502, "gateway_timeout_504": 504}[variant]
    if variant == "server_500":
        return _error_page("server_error", variant, url,
                           server_error_page(status, ctx.profiles.of(host).server, host), status)
    # gateway errors come from the reverse proxy in front of the site, not from the site's server
    return _error_page("server_error", variant, url, server_error_page(status, "nginx", host), status, server="nginx")


def _error_page(kind: str, variant: str, url: str, page: str, status: int, **fields) -> Capture:
    body = page.encode("utf-8")
    return _capture(kind, variant, url, body, "text/html", observed_charset(body, "utf-8"), status=status, **fields)


def _capture(kind: str, variant: str, url: str, body: bytes, mime: str | None,
             charset: CharsetFacts = NO_CHARSET, status: int = 200,
             **fields) -> Capture:
    return Capture(kind=kind, url=url, status=status, body=body, content_type=mime, charset=charset,
                   variant=variant, **fields)


def _redirect_sources(url: str, ctx: BuildContext) -> Iterator[str]:
    if url.startswith("https://"):
        yield scheme_swapped(url)
    yield www_toggled(url)
    yield with_path(url, "/") + f"?p={ctx.rng.randint(100, 99_999)}"
    while True:
        yield with_path(url, f"/s/{ctx.rng.getrandbits(32):08x}")


def _dead_links(site_url: str, ctx: BuildContext) -> Iterator[str]:
    """Paths of the kind that rot: dated articles, CMS query links, news IDs, tag archive pages."""
    rng = ctx.rng
    while True:
        yield with_path(site_url, rng.choice((
            f"/{ctx.crawl_year - rng.randint(1, 8)}/{rng.randint(1, 12):02d}/article-{rng.randint(1, 9999)}/",
            f"/index.php?id={rng.randint(1, 99_999)}",
            f"/news/{rng.randint(10_000, 999_999)}.html",
            f"/tag/{rng.randint(1, 500)}/page/{rng.randint(2, 40)}/")))
