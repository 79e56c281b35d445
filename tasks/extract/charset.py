"""Turn an HTML payload into text: the HTTP charset, then the <meta> charset, then detection.

A declared charset is used only if the bytes really decode with it; valid non-ASCII UTF-8 wins over any other declared
charset (a lying `iso-8859-1` header on UTF-8 bytes is common; legacy bytes that happen to form valid
non-ASCII UTF-8 are practically unheard of). Detection (uchardet via Resiliparse) decides when nothing declared fits, and bytes
that still do not decode are replaced, never raised.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from resiliparse.parse.encoding import bytes_to_str, detect_encoding, map_encoding_to_html5

META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]{2,40})""", re.IGNORECASE)
META_SCAN_BYTES = 4096


@dataclass(slots=True)
class DecodedHtml:
    text: str
    encoding: str
    source: str        # http | meta | utf8 | ascii | detected
    replaced: bool     # invalid byte sequences were replaced


def meta_charset(body: bytes) -> str | None:
    match = META_CHARSET.search(body[:META_SCAN_BYTES])
    return match.group(1).decode("ascii").lower() if match else None


def decode_html(body: bytes, http_charset: str | None) -> DecodedHtml:
    if body.isascii():
        return DecodedHtml(body.decode("ascii"), "ascii", "ascii", False)
    utf8 = _strict(body, "utf-8")
    for source in ("http", "meta"):
        label = http_charset if source == "http" else meta_charset(body)  # the meta scan only when needed
        encoding = map_encoding_to_html5(label, fallback_utf8=False) if label else None
        if encoding is None:
            continue
        if encoding == "utf-8":
            if utf8 is not None:
                return DecodedHtml(utf8, "utf-8", source, False)
            continue
        if utf8 is not None:
            return DecodedHtml(utf8, "utf-8", "utf8", False)
        text = _strict(body, encoding)
        if text is not None:
            return DecodedHtml(text, encoding, source, False)
    if utf8 is not None:
        return DecodedHtml(utf8, "utf-8", "utf8", False)
    damaged_utf8 = _mostly_utf8(body)
    if damaged_utf8 is not None:
        return DecodedHtml(damaged_utf8, "utf-8", "utf8", True)
    detected = detect_encoding(body)
    text = _strict(body, detected)
    if text is not None:
        return DecodedHtml(text, detected, "detected", False)
    return DecodedHtml(bytes_to_str(body, detected, errors="replace"), detected, "detected", True)


def _mostly_utf8(body: bytes) -> str | None:
    """UTF-8 text with a few stray bytes (e.g. one Latin-1 byte pasted in): keep it UTF-8 and replace the strays,
    instead of letting detection re-read every correct multi-byte character as a legacy charset."""
    text = body.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd")
    valid_non_ascii = len(text) - len(text.encode("ascii", "ignore")) - invalid
    # At least as many correctly encoded non-ASCII characters as broken sequences: UTF-8 with damage.
    return text if valid_non_ascii >= max(invalid, 1) else None


def _strict(body: bytes, encoding: str) -> str | None:
    try:
        return body.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None
