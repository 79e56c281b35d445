"""Parse the HTTP response stored in a WARC `response` block: status, headers and the decoded body."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import brotli

HEADER_END = (b"\r\n\r\n", b"\n\n")


@dataclass(slots=True)
class HttpResponse:
    status: int
    headers: dict[str, str]     # lower-cased names; the last value wins
    body: bytes

    @property
    def mime_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def declared_charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.partition("=")
            if name.strip().lower() == "charset" and value.strip(" \"'"):
                return value.strip(" \"'").lower()
        return None


class HttpParseError(ValueError):
    """The block is not a parseable HTTP response; the message says what was wrong."""


class BodyTooLarge(HttpParseError):
    """The decoded body would exceed the caller's limit (a compression bomb, or simply a huge page)."""


def parse_http_response(block: bytes, max_body_bytes: int | None = None) -> HttpResponse:
    """Status, headers and the body with transfer and content encodings undone (at most `max_body_bytes`)."""
    cut, separator = min(((block.find(sep), sep) for sep in HEADER_END if block.find(sep) >= 0),
                         default=(-1, b""))
    if cut < 0:
        raise HttpParseError("no end of HTTP headers")
    head = block[:cut].decode("iso-8859-1")
    lines = [line.rstrip("\r") for line in head.split("\n")]  # not splitlines(): \x85 etc. are header bytes
    parts = lines[0].split(None, 2) if lines else []
    if len(parts) < 2 or not parts[0].upper().startswith("HTTP/") or not (parts[1].isascii() and parts[1].isdigit()):
        raise HttpParseError(f"bad status line {lines[0][:80]!r}" if lines else "empty HTTP head")
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    body = block[cut + len(separator):]
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = _dechunk(body)
    body = _decode_content(body, headers.get("content-encoding", "").strip().lower(), max_body_bytes)
    return HttpResponse(status=int(parts[1]), headers=headers, body=body)


def _dechunk(body: bytes) -> bytes:
    """Undo chunked transfer encoding. Crawlers sometimes store the body already de-chunked while keeping the
    header; when the first line is not a chunk size the body is returned unchanged."""
    out, position = bytearray(), 0
    while True:
        line_end = body.find(b"\n", position)
        if line_end < 0:
            break
        size_text = body[position:line_end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return body if position == 0 else bytes(out)
        if size == 0:
            break
        start = line_end + 1
        out += body[start:start + size]
        position = start + size
        if body[position:position + 2] == b"\r\n":
            position += 2
        elif body[position:position + 1] == b"\n":
            position += 1
    return bytes(out)


def _decode_content(body: bytes, encoding: str, limit: int | None) -> bytes:
    """gzip / deflate / br bodies are decompressed. Common Crawl stores decoded payloads but keeps the original
    header, so a body that does not decode yet looks like markup is kept as it is; one that looks compressed
    but does not decode is an error."""
    if encoding not in ("gzip", "x-gzip", "deflate", "br") or not body:
        return body
    cap = 0 if limit is None else limit + 1  # one byte more than allowed tells "too large" apart; 0 = no cap
    try:
        if encoding in ("gzip", "x-gzip"):
            decoded = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, cap)
        elif encoding == "deflate":
            try:
                decoded = zlib.decompressobj().decompress(body, cap)
            except zlib.error:
                decoded = zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, cap)
        else:
            decoded = brotli.Decompressor().process(body, output_buffer_limit=cap or (1 << 62))
    except (zlib.error, brotli.error) as error:
        if _looks_like_markup(body):
            return body
        raise HttpParseError(f"Content-Encoding {encoding} body does not decode: {error}") from None
    if limit is not None and len(decoded) > limit:
        raise BodyTooLarge(f"decoded {encoding} body exceeds {limit} bytes")
    return decoded


def _looks_like_markup(body: bytes) -> bool:
    head = body[:1024]
    return b"\x00" not in head and b"<" in head
