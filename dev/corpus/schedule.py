"""When each URL was fetched and which shard holds it."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from dev.corpus.captures import Capture

CRAWL_START = datetime(2024, 5, 17, tzinfo=timezone.utc)
CRAWL_SECONDS = 14 * 24 * 3600
RECRAWL_DELAY_SECONDS = (3600, 5 * 24 * 3600)
PAGE_AGE_SECONDS = (3600, 3 * 365 * 24 * 3600)


def assign_dates(captures: list[Capture], rng: random.Random) -> None:
    """Fetch dates in a two-week crawl, re-crawls after their first fetch, copies with their original's age.
    Real records keep their own dates. Captures must come after the ones they re-crawl or copy."""
    for capture in captures:
        if capture.real:
            continue
        if capture.recrawl_of:
            capture.date = capture.recrawl_of.date + timedelta(seconds=rng.randint(*RECRAWL_DELAY_SECONDS))
        else:
            capture.date = CRAWL_START + timedelta(seconds=rng.randint(0, CRAWL_SECONDS))
        if capture.copy_of:
            capture.last_modified = capture.copy_of.last_modified
        elif capture.expect_document:
            capture.last_modified = capture.date - timedelta(seconds=rng.randint(*PAGE_AGE_SECONDS))


def into_shards(captures: list[Capture], shards: int, rng: random.Random) -> list[list[Capture]]:
    """Captures dealt at random over the shards, each shard in fetch order like a crawler's output."""
    order = rng.sample(captures, len(captures))
    return [sorted(order[index::shards], key=lambda capture: capture.date) for index in range(shards)]
