"""Charset ground truth: what a page declares, what its bytes really are, and re-encodings that set traps.

The traps are the ones met in real crawls: an HTTP header that says UTF-8 over windows-1252 bytes (and the
reverse), no declaration anywhere, a declaration only in a <meta> tag, and UTF-8 pages with stray latin-1 bytes.
"""
from __future__ import annotations

import codecs
import random
import re
from dataclasses import dataclass

META_CHARSET = re.compile(
    r"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]{2,40})[^>]*>""", re.IGNORECASE)
XML_DECLARATION = re.compile(r"""^\s*<\?xml[^>]*\?>\s*""")
HEAD_OPEN = re.compile(r"<head\b[^>]*>", re.IGNORECASE)
HEAD_CLOSE = re.compile(rb"</head\s*>", re.IGNORECASE)
META_SCAN_LIMIT = 65_536
LATIN1_LETTER = re.compile("[\u00a0-\u00ff]")
NON_ASCII_BYTE = re.compile(rb"[\x80-\xff]")
STRAY_LATIN1_SHARE = 0.2

# Legacy charsets a site in each language really uses; languages without one only get the UTF-8 traps.
LEGACY_CHARSETS = {
    "de": ("windows-1252", "iso-8859-1", "iso-8859-15"),
    "en": ("windows-1252", "iso-8859-1"),
    "es": ("windows-1252", "iso-8859-1"),
    "fr": ("windows-1252", "iso-8859-1", "iso-8859-15"),
    "it": ("windows-1252", "iso-8859-1"),
    "pt": ("windows-1252", "iso-8859-1"),
    "fi": ("windows-1252", "iso-8859-1"),
    "no": ("windows-1252", "iso-8859-1"),
    "pl": ("windows-1250", "iso-8859-2"),
    "cs": ("windows-1250", "iso-8859-2"),
    "hu": ("windows-1250", "iso-8859-2"),
    "ru": ("koi8-r", "windows-1251"),
    "ja": ("shift_jis", "euc-jp"),
    "zh": ("gbk", "gb18030", "big5"),
    "ar": ("windows-1256",),
}
TRAPS = ("http_says_utf8", "http_says_legacy", "undeclared", "meta_only", "stray_latin1")
NEEDS_LEGACY_CHARSET = ("http_says_utf8", "undeclared", "meta_only")
# What a header names when it lies about UTF-8 bytes (old server defaults).
LYING_LEGACY_HEADER = ("iso-8859-1", "windows-1252")


@dataclass(frozen=True)
class CharsetFacts:
    http: str | None        # charset parameter of the HTTP Content-Type
    meta: str | None        # charset in a <meta> tag of the page
    actual: str | None      # the encoding the bytes are really in
    invalid_bytes: bool     # the bytes hold sequences that are invalid in `actual`


@dataclass(frozen=True)
class Reencoded:
    body: bytes
    facts: CharsetFacts
    variant: str


def declared_meta_charset(raw: bytes) -> str | None:
    """The first <meta> charset in the document head (a parser honours one anywhere in the head)."""
    head_end = HEAD_CLOSE.search(raw, 0, META_SCAN_LIMIT)
    head = raw[:head_end.start() if head_end else META_SCAN_LIMIT].decode("ascii", "replace")
    match = META_CHARSET.search(head)
    return match.group(1).lower() if match else None


def actual_charset(raw: bytes, meta: str | None) -> tuple[str | None, bool]:
    """(encoding, has_invalid_bytes) of a real page: UTF-8 if it decodes, else its declared legacy charset, else
    windows-1252; bytes that are mostly UTF-8 with a few broken sequences stay UTF-8 with invalid bytes."""
    if _decodes(raw, "utf-8"):
        return "utf-8", False
    if meta and meta not in ("utf-8", "utf8") and _decodes(raw, meta):
        return meta, False
    broken = raw.decode("utf-8", "replace").count("\ufffd")
    if broken * 20 < len(NON_ASCII_BYTE.findall(raw)):
        return "utf-8", True
    return ("windows-1252", False) if _decodes(raw, "windows-1252") else (None, True)


def has_non_western_charset(lang: str | None) -> bool:
    """Languages whose legacy charsets are not windows-1252 (these traps are rarer in the pages, so sought)."""
    return lang in LEGACY_CHARSETS and LEGACY_CHARSETS[lang][0] != "windows-1252"


def reencode(page: str, lang: str | None, trap: str, rng: random.Random) -> Reencoded:
    """Serve `page` (decoded text) in the charset trap `trap`; traps that need a legacy charset fall back to a
    lying legacy header over UTF-8 for languages that never had one."""
    bare = strip_charset_declarations(page)
    if trap in NEEDS_LEGACY_CHARSET and lang not in LEGACY_CHARSETS:
        trap = "http_says_legacy"
    legacy = rng.choice(LEGACY_CHARSETS[lang]) if lang in LEGACY_CHARSETS else None
    if trap == "http_says_utf8":
        meta = rng.choice((legacy, None))
        body = with_meta_charset(bare, meta).encode(legacy, "xmlcharrefreplace")
        return Reencoded(body, CharsetFacts("utf-8", meta, legacy, False), f"http_says_utf8_bytes_{legacy}")
    if trap == "http_says_legacy":
        header = rng.choice(LYING_LEGACY_HEADER)
        meta = rng.choice(("utf-8", None))
        body = with_meta_charset(bare, meta).encode("utf-8")
        return Reencoded(body, CharsetFacts(header, meta, "utf-8", False), f"http_says_{header}_bytes_utf8")
    if trap == "undeclared":
        body = bare.encode(legacy, "xmlcharrefreplace")
        return Reencoded(body, CharsetFacts(None, None, legacy, False), f"undeclared_{legacy}")
    if trap == "meta_only":
        body = with_meta_charset(bare, legacy).encode(legacy, "xmlcharrefreplace")
        return Reencoded(body, CharsetFacts(None, legacy, legacy, False), f"meta_only_{legacy}")
    return _stray_latin1_in_utf8(bare, rng)


def _stray_latin1_in_utf8(bare: str, rng: random.Random) -> Reencoded:
    """A UTF-8 page where some non-ASCII characters were stored as single latin-1 bytes (mixed-encoding CMS)."""
    declared = with_meta_charset(bare, "utf-8")
    pieces, cursor = [], 0
    for match in LATIN1_LETTER.finditer(declared):
        if rng.random() < STRAY_LATIN1_SHARE:
            pieces += [declared[cursor:match.start()].encode("utf-8"), match.group(0).encode("latin-1")]
            cursor = match.end()
    if not pieces:   # no latin-1 letters to break: a cp1252 en dash slips in before </body>
        marker = declared.rfind("</body>")
        cursor = marker if marker >= 0 else len(declared)
        pieces = [declared[:cursor].encode("utf-8"), b" \x96 "]
    body = b"".join(pieces) + declared[cursor:].encode("utf-8")
    return Reencoded(body, CharsetFacts("utf-8", "utf-8", "utf-8", True), "stray_latin1_bytes_in_utf8")


def strip_charset_declarations(page: str) -> str:
    return META_CHARSET.sub("", XML_DECLARATION.sub("", page, count=1))


def with_meta_charset(page: str, charset: str | None) -> str:
    if charset is None:
        return page
    tag = f'<meta charset="{charset}">'
    head = HEAD_OPEN.search(page)
    return page[:head.end()] + tag + page[head.end():] if head else tag + page


def _decodes(raw: bytes, encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
        raw.decode(encoding)
    except (LookupError, UnicodeDecodeError):
        return False
    return True
