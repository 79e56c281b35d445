"""Normalized forms that dedup compares, and the 64-bit keys made of them.

Keys are signed 64-bit integers (what Parquet and numpy sort fastest), taken from BLAKE2b: at 64 bits two
different texts share a key with probability ~n^2 / 2^65, about 3e-2 for a billion documents, which would
merge one pair of distinct documents; the paragraph and band keys are compared within far smaller groups.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit

from configs.dedup import TextNormalization

_DIGITS = re.compile(r"\d")
_SPACES = re.compile(r"\s+")
# Query parameters that track the visitor, not the content (Google/Facebook/Microsoft click ids, UTM, ...).
_TRACKING_PARAMETERS = re.compile(r"^(utm_\w+|fbclid|gclid|dclid|msclkid|mc_cid|mc_eid|yclid|_ga|ref|ref_src|"
                                  r"sessionid|phpsessid|sid|jsessionid)$", re.IGNORECASE)


def key64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little", signed=True)


def normalize_text(text: str, config: TextNormalization) -> str:
    if config.lowercase:
        text = text.casefold()
    if config.digits_to_zero:
        text = _DIGITS.sub("0", text)
    if config.strip_punctuation:
        text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)
    if config.collapse_whitespace:
        text = _SPACES.sub(" ", text).strip()
    return text


def normalize_url(url: str) -> str:
    """The page a URL names: scheme, `www.`, default port, fragment, trailing slash, tracking parameters and
    parameter order do not matter."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:  # a malformed URL is its own key
        return url.strip()
    host = host[4:] if host.startswith("www.") else host
    if port and port not in (80, 443):
        host = f"{host}:{port}"
    query = sorted((name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True)
                   if not _TRACKING_PARAMETERS.match(name))
    path = parts.path.rstrip("/") or "/"
    return f"{host}{path}" + (f"?{urlencode(query)}" if query else "")
