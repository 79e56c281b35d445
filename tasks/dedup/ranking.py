"""Which document of a duplicate group stays: the keep policies as sort keys (smallest key stays)."""
from __future__ import annotations

from typing import Literal

KeepPolicy = Literal["first_seen", "newest", "longest"]


def rank_key(policy: KeepPolicy, doc_id: str, date: str, length: int) -> tuple:
    """Ties, and captures without a date, fall back to the smallest id: the choice never depends on order."""
    if policy == "first_seen":
        return (date == "", date, doc_id)
    if policy == "newest":
        return (_newest_first(date), doc_id)
    return (-length, doc_id)


def _newest_first(date: str) -> tuple[int, ...]:
    """A key that orders ISO-8601 date strings newest first; an empty date sorts last."""
    return tuple(-ord(ch) for ch in date) + (1,)
