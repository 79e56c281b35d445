"""HTTP/1.1 messages as a crawler stores them in WARC request and response blocks."""
from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from email.utils import format_datetime
from http import HTTPStatus
from urllib.parse import urlsplit

from dev.corpus.urls import crawlable

CRAWLER_REQUEST_HEADERS = (
    ("User-Agent", "CCBot/2.0 (https://commoncrawl.org/faq/)"),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    ("Accept-Language", "en-US,en;q=0.5"),
    ("Accept-Encoding", "br,gzip"),
)
SERVERS = ("nginx", "nginx/1.18.0 (Ubuntu)", "nginx/1.24.0", "Apache", "Apache/2.4.41 (Ubuntu)",
           "Apache/2.4.57 (Debian)", "cloudflare", "LiteSpeed", "Microsoft-IIS/10.0", "openresty")
POWERED_BY = (None, None, "PHP/7.4.33", "PHP/8.1.27", "PHP/8.2.15", "Express", "ASP.NET")
UNOFFICIAL_REASONS = {520: "Unknown Error", 521: "Web Server Is Down", 522: "Connection Timed Out"}


@dataclass(frozen=True)
class ServerProfile:
    """How one host answers: its address and the shape of its response headers."""
    ip: str
    server: str
    powered_by: str | None
    lowercase_names: bool       # HTTP/2 front ends (cloudflare, CDNs) send lower-case header names
    decoded_gzip: bool          # the crawler un-gzipped the body and marked it X-Crawler-Content-Encoding


def server_profile(rng: random.Random) -> ServerProfile:
    server = rng.choice(SERVERS)
    return ServerProfile(
        ip=f"{rng.randint(23, 212)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        server=server,
        powered_by=rng.choice(POWERED_BY),
        lowercase_names=server == "cloudflare" or rng.random() < 0.2,
        decoded_gzip=rng.random() < 0.6,
    )


def http_date(moment: datetime) -> str:
    return format_datetime(moment, usegmt=True)


def request_block(url: str) -> bytes:
    parts = urlsplit(crawlable(url))
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"GET {target} HTTP/1.1", *(f"{n}: {v}" for n, v in CRAWLER_REQUEST_HEADERS),
             f"Host: {parts.netloc}", "Connection: Keep-Alive"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def response_block(status: int, content_type: str | None, body: bytes, fetched: datetime,
                   profile: ServerProfile, last_modified: datetime | None = None,
                   extra_headers: tuple[tuple[str, str], ...] = (), server: str | None = None) -> bytes:
    """Status line, the headers a server of this profile sends, and the body with a matching Content-Length."""
    headers = [("Date", http_date(fetched)), ("Server", server or profile.server)]
    if content_type:
        headers.append(("Content-Type", content_type))
    headers += list(extra_headers)
    if last_modified:
        headers.append(("Last-Modified", http_date(last_modified)))
    if status == 200:
        headers.append(("Vary", "Accept-Encoding"))
        if profile.powered_by and content_type and content_type.startswith("text/html"):
            headers.append(("X-Powered-By", profile.powered_by))
        if profile.decoded_gzip and content_type and content_type.startswith("text/"):
            headers.append(("X-Crawler-Content-Encoding", "gzip"))
    headers += [("Connection", "close"), ("Content-Length", str(len(body)))]
    if profile.lowercase_names:
        headers = [(name.lower(), value) for name, value in headers]
    lines = [f"HTTP/1.1 {status} {reason_phrase(status)}", *(f"{n}: {v}" for n, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return UNOFFICIAL_REASONS[status]


@dataclass(frozen=True)
class ParsedResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes            # with any chunked transfer coding removed

    def header(self, name: str) -> str | None:
        values = [value for key, value in self.headers if key.lower() == name]
        return values[-1] if values else None

    @property
    def mime_type(self) -> str | None:
        value = self.header("content-type")
        return (value.split(";")[0].strip().lower() or None) if value else None

    @property
    def charset(self) -> str | None:
        for parameter in (self.header("content-type") or "").split(";")[1:]:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "charset" and value.strip(" \"'"):
                return value.strip(" \"'").lower()
        return None


def parse_response(block: bytes) -> ParsedResponse | None:
    """The status, headers and body of a stored HTTP response, or None if the block is not one."""
    head, separator, body = block.partition(b"\r\n\r\n")
    if not separator or not head.startswith(b"HTTP/"):
        return None
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[1].isdigit():
        return None
    headers = [(name.strip(), value.strip()) for name, _, value in (line.partition(":") for line in header_lines)]
    parsed = ParsedResponse(int(fields[1]), headers, body)
    if (parsed.header("transfer-encoding") or "").lower() == "chunked":
        parsed = ParsedResponse(parsed.status, headers, _dechunk(body))
    return parsed


def _dechunk(body: bytes) -> bytes:
    chunks, position = [], 0
    while True:
        line_end = body.find(b"\r\n", position)
        if line_end < 0:
            break
        try:
            size = int(body[position:line_end].split(b";")[0].strip(), 16)
        except ValueError:
            break
        if size == 0:
            break
        chunks.append(body[line_end + 2:line_end + 2 + size])
        position = line_end + 2 + size + 2
    return b"".join(chunks)
