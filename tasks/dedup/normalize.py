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

_DIGITS = re.compile(r"\d")   # decimal digits of any script
_ASCII_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")
_OTHER_NON_WORD = re.compile(r"[^\w\s\x00-\x7f]")
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
        text = _strip_punctuation(text)
    if config.collapse_whitespace:
        text = " ".join(text.split())
    return text


def normalize_lines(text: str, config: TextNormalization) -> list[str]:
    """`normalize_text` of every line of `text`, with the case and character passes done once for the whole
    text (they never touch a newline)."""
    whole = normalize_text(text, config.model_copy(update={"collapse_whitespace": False}))
    lines = whole.split("\n")
    return [" ".join(line.split()) for line in lines] if config.collapse_whitespace else lines


def _strip_punctuation(text: str) -> str:
    r"""Punctuation and symbols (Unicode categories P*, S*) -> spaces. ASCII ones by one character class; the
    rarer others are found among non-word characters and checked one by one (a class of every P/S code point
    is ten times slower in `re`, and a marks-blind `[^\w\s]` would split words of Indic scripts apart)."""
    text = _ASCII_PUNCTUATION.sub(" ", text)
    return _OTHER_NON_WORD.sub(_space_if_punctuation, text)


def _space_if_punctuation(match: re.Match) -> str:
    return " " if unicodedata.category(match.group())[0] in "PS" else match.group()


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
