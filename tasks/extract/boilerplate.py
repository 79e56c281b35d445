"""Shard-level boilerplate-line removal: drop lines that repeat across documents of one WARC shard.

Site chrome (menus, cookie notices, newsletter boxes, "Share this") repeats on every page of a host, and
Common Crawl WARC files hold many pages of the same host, so counting lines over the shard finds what a
per-page extractor cannot (CCNet and LLaMA remove repeated paragraphs the same way).

Choices:
- A line counts once per document; a document whose text equals an earlier one of the shard does not
  count again (exact duplicates are the document-dedup stage's business, not a sign of boilerplate).
- Blank lines are never counted or removed.
- A document all of whose lines are repeated is kept unchanged when `keep_emptied_documents` is set:
  it is most often one of several near-duplicate copies of a page (print/AMP/canonical URLs), which
  near-duplicate detection later reduces to one copy; removing the lines would lose every copy.
  Otherwise it becomes "" and the caller drops it like any empty text.
"""
from __future__ import annotations

import re
from collections import Counter

from configs.html import BoilerplateConfig

_DIGITS = re.compile(r"\d")


def line_key(line: str) -> str:
    """Lines equal up to case, digits and spacing are the same line ("© 2019 ACME" = "© 2023 Acme")."""
    return _DIGITS.sub("0", " ".join(line.split()).casefold())


def remove_repeated_lines(texts: list[str], hosts: list[str], config: BoilerplateConfig) -> tuple[list[str], int]:
    """Texts of one shard with their repeated lines removed, and how many lines were removed.

    `hosts[i]` is the host of `texts[i]`; "" means unknown, which takes part only in the shard-wide rule.
    """
    if len(texts) != len(hosts):
        raise ValueError(f"{len(texts)} texts but {len(hosts)} hosts")
    if not config.enabled:
        return list(texts), 0

    keys_per_text = [[line_key(line) for line in text.split("\n")] for text in texts]
    shard_counts: Counter[str] = Counter()
    host_counts: Counter[tuple[str, str]] = Counter()
    counted: set[str] = set()
    for text, host, keys in zip(texts, hosts, keys_per_text):
        if text in counted:
            continue
        counted.add(text)
        distinct = {key for key in keys if key}
        shard_counts.update(distinct)
        if host:
            host_counts.update((host, key) for key in distinct)

    def repeated(key: str, host: str) -> bool:
        if not key:
            return False
        if host and host_counts[(host, key)] >= config.min_host_documents:
            return True
        return config.min_shard_documents is not None and shard_counts[key] >= config.min_shard_documents

    cleaned: list[str] = []
    removed = 0
    for text, host, keys in zip(texts, hosts, keys_per_text):
        lines = text.split("\n")
        kept = [line for line, key in zip(lines, keys) if not repeated(key, host)]
        has_content = any(line.strip() for line in kept)
        if not has_content and config.keep_emptied_documents:
            cleaned.append(text)
            continue
        removed += len(lines) - len(kept)
        cleaned.append("\n".join(kept) if has_content else "")
    return cleaned, removed
