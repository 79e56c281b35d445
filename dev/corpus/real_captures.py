"""Real crawled responses as corpus captures, with the duplicates they already contain labelled."""
from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import numpy as np
from resiliparse.parse.encoding import bytes_to_str, detect_encoding

from dev.corpus.captures import Capture, observed_charset
from dev.corpus.charsets import CharsetFacts
from dev.corpus.near_duplicates import TARGETS
from dev.corpus.real_records import RealResponse
from dev.corpus.similarity import jaccard, main_text, shingles

HTML_SHARE_OF_SAMPLE = 2 / 3
MIN_DUPLICATE_JACCARD = min(TARGETS)     # the generated near-duplicates' lowest similarity


def real_captures(responses: Sequence[RealResponse], count: int | None, rng: random.Random) -> list[Capture]:
    """All responses, or a sample of `count` that is two-thirds HTML."""
    chosen = responses
    if count is not None:
        html = [r for r in responses if r.is_html]
        other = [r for r in responses if not r.is_html]
        html_count = round(count * HTML_SHARE_OF_SAMPLE)
        chosen = rng.sample(html, html_count) + rng.sample(other, count - html_count)
    captures = [_capture(response) for response in chosen]
    label_near_identical_texts(captures)
    return captures


def _capture(response: RealResponse) -> Capture:
    http = response.http
    charset = (observed_charset(http.body, http.charset) if response.is_html
               else CharsetFacts(http.charset, None, None, False))
    return Capture(kind="real_cc", url=response.url, status=http.status, body=http.body,
                   content_type=http.mime_type, charset=charset, variant=response.warc.split("/")[1],
                   source_page=f"{response.warc}#{response.record_id}", real=response, date=response.date)


def label_near_identical_texts(captures: list[Capture]) -> None:
    """The real crawls repeat pages (the Internet Archive sample has 54 repeated texts among 140, and its forum posts
    and help pages are mostly the same site chrome). A document whose extracted text is at least as similar to an
    earlier one's as the generated near-duplicates' lowest target (5-word-shingle Jaccard >= 0.5) joins that one's
    `real-` cluster, so that dedup scoring counts it as the copy it is. Clusters grow around their first document,
    as a generated original's copies do, not by chains of pairs (the site's pages are alike, not all copies)."""
    clusters: list[tuple[np.ndarray, list[Capture]]] = []     # (first document's shingles, members)
    for capture in captures:
        if not capture.expect_document:
            continue
        text = main_text(bytes_to_str(capture.body, detect_encoding(capture.body))).strip()
        if not text:
            continue
        text_shingles = shingles(text)
        cluster = next((members for first, members in clusters
                        if jaccard(first, text_shingles) >= MIN_DUPLICATE_JACCARD), None)
        if cluster is None:
            clusters.append((text_shingles, [capture]))
        else:
            cluster.append(capture)
    numbers = itertools.count(1)
    for _, members in clusters:
        if len(members) > 1:
            name = f"real-{next(numbers):05d}"
            for capture in members:
                capture.dup_cluster = name
