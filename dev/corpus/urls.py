"""URLs as a crawler meets them: percent-encoded, and the other addresses one page is reachable at."""
from __future__ import annotations

import itertools
import random
import unicodedata
from collections.abc import Iterable, Iterator
from urllib.parse import quote, urlsplit, urlunsplit

URL_SAFE = "/%:@!$&'()*+,;=-._~?#"
TRACKING_PARAMETERS = ("utm_source=twitter&utm_medium=social", "utm_source=newsletter&utm_campaign=weekly",
                       "fbclid=IwAR0x", "ref=homepage", "utm_source=rss&utm_medium=feed")
MIRROR_WORDS = (("daily", "news", "world", "top", "the", "my", "global", "insider", "fresh"),
                ("hub", "feed", "digest", "wire", "today", "press", "reader", "post", "times"),
                ("com", "net", "info", "org", "xyz", "online"))


def crawlable(url: str) -> str:
    """IDN host in punycode and non-ASCII path characters percent-encoded, as in a request line."""
    parts = urlsplit(url)
    host = parts.netloc if parts.netloc.isascii() else parts.netloc.encode("idna").decode("ascii")
    return urlunsplit((parts.scheme, host, quote(parts.path, safe=URL_SAFE),
                       quote(parts.query, safe=URL_SAFE), ""))


def host_of(url: str) -> str:
    return urlsplit(url).netloc


def with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def tracking_copy(url: str, rng: random.Random) -> str:
    separator = "&" if urlsplit(url).query else "?"
    return f"{url}{separator}{rng.choice(TRACKING_PARAMETERS)}"


def scheme_swapped(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(("http" if parts.scheme == "https" else "https", *parts[1:]))


def www_toggled(url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.removeprefix("www.") if parts.netloc.startswith("www.") else "www." + parts.netloc
    return urlunsplit((parts.scheme, host, *parts[2:]))


def mobile_copy(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, "m." + parts.netloc.removeprefix("www."), *parts[2:]))


def amp_copy(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/amp/", parts.query, ""))


def print_copy(url: str) -> str:
    return f"{url}{'&' if urlsplit(url).query else '?'}print=1"


def mirror_copy(url: str, rng: random.Random) -> str:
    """The same path on an aggregator or scraper site."""
    first, second, tld = (rng.choice(words) for words in MIRROR_WORDS)
    parts = urlsplit(url)
    return urlunsplit(("https", f"www.{first}{second}{rng.randint(1, 99)}.{tld}", parts.path, parts.query, ""))


def slug(text: str, max_words: int = 8) -> str:
    """An ASCII path segment from the text's first words (accents dropped; scripts without Latin letters
    leave nothing, so those get a generic name)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    words = "".join(c if c.isalnum() else " " for c in ascii_text).split()
    return "-".join(words[:max_words]) or "page"


def numbered(url: str) -> Iterator[str]:
    """`url`, then the same with a page parameter, for when the plain one is taken."""
    yield url
    separator = "&" if urlsplit(url).query else "?"
    for number in itertools.count(2):
        yield f"{url}{separator}page={number}"


class UrlRegistry:
    """Hands out each URL once, so that only intended re-crawls share a URL."""

    def __init__(self):
        self._taken: set[str] = set()

    def claim(self, url: str) -> bool:
        if url in self._taken:
            return False
        self._taken.add(url)
        return True

    def first_free(self, candidates: Iterable[str]) -> str:
        for url in candidates:
            if self.claim(url):
                return url
        raise RuntimeError("every candidate URL is taken")
