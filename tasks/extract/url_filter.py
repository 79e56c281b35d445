"""URL blocklist: blocked domains (a domain blocks its subdomains too) and banned words in the URL."""
from __future__ import annotations

import gzip
import re
from urllib.parse import urlsplit

import fsspec

ADBLOCK_DOMAIN_RULE = re.compile(r"^\|\|([a-z0-9.-]+\.[a-z]{2,})\^?$")


def load_blocklist(url: str) -> set[str]:
    """Domains from a file of plain domains or Adblock `||domain^` rules (other rules are ignored)."""
    with fsspec.open(url, "rb") as handle:
        raw = handle.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    domains = set()
    for line in raw.decode("utf-8", errors="replace").splitlines():
        line = line.strip().lower()
        if not line or line.startswith(("#", "!", "[")):
            continue
        match = ADBLOCK_DOMAIN_RULE.match(line)
        if match:
            domains.add(match.group(1))
        elif "/" not in line and "|" not in line and "." in line and " " not in line:
            domains.add(line.lstrip("."))
    return domains


def host_of(url: str) -> str:
    """Lower-case host name, or "" for a URL too malformed to have one (e.g. `http://[broken/`)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


class UrlFilter:
    def __init__(self, domains: set[str], banned_words: list[str]):
        self.domains = {d.lower().strip(".") for d in domains}
        self.banned_words = [w.lower() for w in banned_words if w]

    def blocked_reason(self, url: str) -> str | None:
        """`url_blocked_domain`, `url_banned_word` or None when the URL may pass."""
        host = host_of(url)
        parts = host.split(".")
        if any(".".join(parts[i:]) in self.domains for i in range(len(parts))):
            return "url_blocked_domain"
        lowered = url.lower()
        if any(word in lowered for word in self.banned_words):
            return "url_banned_word"
        return None
