"""From one WARC record to a candidate document (or the named reason it is not one)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from tasks.extract.charset import decode_html
from tasks.extract.http_response import BodyTooLarge, HttpParseError, parse_http_response
from tasks.extract.records import RawRecord

HTML_TYPES = ("text/html", "application/xhtml+xml")
DOCUMENT_RECORD_TYPES = ("response", "resource", "conversion", "revisit")


@dataclass(slots=True)
class Payload:
    """A record that may become a document: decoded markup (or WET text) plus where it came from."""
    record: RawRecord
    markup: str
    is_plain_text: bool
    charset: str
    charset_source: str
    charset_replaced: bool


class NotADocument(Exception):
    """Raised with a drop reason (e.g. `http_redirect`) when a record cannot become a document."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def document_id(record: RawRecord, warc_name: str) -> str:
    """Stable across runs: the WARC-Record-ID when there is one, else the file name and byte offset."""
    key = record.record_id or f"{warc_name}@{record.offset}"
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def is_candidate(record: RawRecord) -> bool:
    return record.record_type in DOCUMENT_RECORD_TYPES


def payload_of(record: RawRecord, max_body_bytes: int | None = None) -> Payload:
    """Decode a response / resource / conversion record into markup or text; raise NotADocument otherwise."""
    if record.record_type == "revisit":
        raise NotADocument("revisit", "revisit records carry no payload")
    if record.block is None:
        raise NotADocument("oversize_payload", f"{record.declared_length} bytes")
    if record.truncated:
        raise NotADocument("truncated_record", f"{len(record.block)} of {record.declared_length} bytes")
    if record.record_type == "conversion":
        text = record.block.decode("utf-8", errors="replace")
        return Payload(record, text, True, "utf-8", "wet", "\ufffd" in text)
    if record.record_type == "response":
        if not record.target_uri.lower().startswith(("http://", "https://")):
            raise NotADocument("non_http_response", record.target_uri.split(":", 1)[0])  # e.g. Heritrix dns:
        try:
            response = parse_http_response(record.block, max_body_bytes)
        except BodyTooLarge as error:
            raise NotADocument("oversize_payload", str(error)) from None
        except HttpParseError as error:
            raise NotADocument("bad_http", str(error)) from None
        _require_success(response.status)
        mime, charset, body = response.mime_type, response.declared_charset, response.body
    else:  # resource: the WARC Content-Type describes the payload itself
        mime = record.content_type.split(";", 1)[0].strip().lower()
        charset, body = None, record.block
    if mime not in HTML_TYPES and not (not mime and _sniffs_as_html(body)):
        raise NotADocument("non_html", mime or "no content type")
    if not body.strip():
        raise NotADocument("empty_payload")
    decoded = decode_html(body, charset)
    return Payload(record, decoded.text, False, decoded.encoding, decoded.source, decoded.replaced)


def _require_success(status: int) -> None:
    if 200 <= status < 300:
        return
    if 300 <= status < 400:
        raise NotADocument("http_redirect", str(status))
    if 400 <= status < 500:
        raise NotADocument("http_client_error", str(status))
    if status >= 500:
        raise NotADocument("http_server_error", str(status))
    raise NotADocument("http_status_other", str(status))


def _sniffs_as_html(body: bytes) -> bool:
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))
