"""One fetched URL of the corpus with everything its ground-truth label says about it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from dev.corpus.charsets import CharsetFacts, actual_charset, declared_meta_charset
from dev.corpus.real_records import RealResponse

HTML_TYPES = ("text/html", "application/xhtml+xml")
NO_CHARSET = CharsetFacts(None, None, None, False)
XHTML_MARKERS = re.compile(rb"<\?xml|<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML", re.IGNORECASE)


@dataclass(eq=False)
class Capture:
    kind: str
    url: str
    status: int
    body: bytes
    content_type: str | None                  # MIME type the server sent
    charset: CharsetFacts = NO_CHARSET
    variant: str | None = None                # how a kind was made, e.g. "keyword_stuffed", "meta_only_koi8-r"
    source_page: str | None = None
    body_source: str | None = None            # reference text written into a page template
    lang: str | None = None
    dup_cluster: str | None = None
    target_jaccard: float | None = None
    measured_jaccard: float | None = None
    extra_headers: tuple[tuple[str, str], ...] = ()
    server: str | None = None                 # overrides the host's usual Server header (its own error page)
    recrawl_of: Capture | None = None         # the same URL fetched earlier; this fetch must come later
    copy_of: Capture | None = None            # the capture whose bytes this one repeats
    real: RealResponse | None = None          # copied verbatim from a real crawl
    truncated: bool = False
    date: datetime | None = None              # assigned by the scheduler
    last_modified: datetime | None = None

    @property
    def is_html(self) -> bool:
        return self.content_type in HTML_TYPES

    @property
    def expect_document(self) -> bool:
        return self.status == 200 and self.is_html and not self.truncated

    @property
    def identified_payload_type(self) -> str | None:
        """What a content sniffer reports for the payload, as Common Crawl's WARC-Identified-Payload-Type."""
        if not self.body:
            return None
        if self.is_html:
            return "application/xhtml+xml" if XHTML_MARKERS.search(self.body[:1024]) else "text/html"
        return self.content_type

    @property
    def header_content_type(self) -> str | None:
        if self.content_type and self.charset.http:
            return f"{self.content_type}; charset={self.charset.http}"
        return self.content_type


def observed_charset(body: bytes, http_charset: str | None) -> CharsetFacts:
    """Charset facts of an HTML body that was not re-encoded on purpose: read from its own bytes."""
    meta = declared_meta_charset(body)
    actual, invalid = actual_charset(body, meta)
    return CharsetFacts(http_charset, meta, actual, invalid)
