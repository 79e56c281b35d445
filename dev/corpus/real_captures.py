"""Real crawled responses as corpus captures, with the duplicates they already contain labelled."""
from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from resiliparse.parse.encoding import bytes_to_str, detect_encoding

from dev.corpus.captures import Capture, observed_charset
from dev.corpus.charsets import CharsetFacts
from dev.corpus.real_records import RealResponse
from dev.corpus.similarity import main_text

HTML_SHARE_OF_SAMPLE = 2 / 3


def real_captures(responses: Sequence[RealResponse], count: int | None, rng: random.Random) -> list[Capture]:
    """All responses, or a sample of `count` that is two-thirds HTML."""
    chosen = responses
    if count is not None:
        html = [r for r in responses if r.is_html]
        other = [r for r in responses if not r.is_html]
        html_count = round(count * HTML_SHARE_OF_SAMPLE)
        chosen = rng.sample(html, html_count) + rng.sample(other, count - html_count)
    captures = [_capture(response) for response in chosen]
    _label_identical_texts(captures)
    return captures


def _capture(response: RealResponse) -> Capture:
    http = response.http
    charset = (observed_charset(http.body, http.charset) if response.is_html
               else CharsetFacts(http.charset, None, None, False))
    return Capture(kind="real_cc", url=response.url, status=http.status, body=http.body,
                   content_type=http.mime_type, charset=charset, variant=response.warc.split("/")[1],
                   source_page=f"{response.warc}#{response.record_id}", real=response, date=response.date)


def _label_identical_texts(captures: list[Capture]) -> None:
    """The real crawls repeat pages (the Internet Archive sample has 54 repeated texts among 140): documents
    whose extracted text is identical share a `real-` cluster, so that dedup scoring counts them."""
    by_text: dict[str, list[Capture]] = {}
    for capture in captures:
        if capture.expect_document:
            text = main_text(bytes_to_str(capture.body, detect_encoding(capture.body))).strip()
            if text:
                by_text.setdefault(text, []).append(capture)
    numbers = itertools.count(1)
    for group in by_text.values():
        if len(group) > 1:
            cluster = f"real-{next(numbers):05d}"
            for capture in group:
                capture.dup_cluster = cluster
