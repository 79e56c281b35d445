"""WARC/1.0 shards in Common Crawl's layout: a warcinfo record, then request, response and metadata records
per fetched URL, each record compressed as its own gzip member so that readers can seek to it and resync."""
from __future__ import annotations

import base64
import gzip
import hashlib
import random
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

WARC_VERSION = "WARC/1.0"
GZIP_LEVEL = 6


def sha1_digest(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


EMPTY_PAYLOAD_DIGEST = sha1_digest(b"")     # a GET request has no payload; Common Crawl still records its digest


def warc_date(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class RecordIds:
    """WARC-Record-IDs drawn from the corpus seed, so that the same seed writes the same IDs."""

    def __init__(self, rng: random.Random):
        self._rng = rng

    def new(self) -> str:
        return f"<urn:uuid:{uuid.UUID(int=self._rng.getrandbits(128), version=4)}>"


@dataclass(frozen=True)
class Fetch:
    """One fetched URL: what goes into its request, response and metadata records."""
    url: str
    date: datetime
    ip: str
    request: bytes
    response: bytes
    response_id: str
    payload_type: str | None        # WARC-Identified-Payload-Type, as a content sniffer would report it
    fetch_time_ms: int


@dataclass(frozen=True)
class ShardSummary:
    file: str
    bytes: int
    sha256: str
    records: int


class ShardWriter:
    def __init__(self, path: Path, ids: RecordIds, warcinfo_fields: dict[str, str], created: datetime):
        self.path = path
        self._ids = ids
        self._file = path.open("wb")
        self._sha256 = hashlib.sha256()
        self._offset = 0
        self._records = 0
        self._warcinfo_id = ids.new()
        info = "".join(f"{name}: {value}\r\n" for name, value in warcinfo_fields.items()).encode("utf-8")
        self._write_member(_record([
            ("WARC-Type", "warcinfo"), ("WARC-Date", warc_date(created)), ("WARC-Record-ID", self._warcinfo_id),
            ("Content-Type", "application/warc-fields"), ("WARC-Filename", path.name),
            ("WARC-Block-Digest", sha1_digest(info)),
        ], info))

    def write_fetch(self, fetch: Fetch, cut_response: bool = False) -> int:
        """Write the request, response and metadata records; returns the response's gzip member offset.
        With `cut_response` the response member is cut in half and nothing follows it (a crawler that died)."""
        request_id = self._ids.new()
        common = [("WARC-Warcinfo-ID", self._warcinfo_id)]
        self._write_member(_record([
            ("WARC-Type", "request"), ("WARC-Date", warc_date(fetch.date)), ("WARC-Record-ID", request_id),
            ("Content-Type", "application/http; msgtype=request"), *common, ("WARC-IP-Address", fetch.ip),
            ("WARC-Target-URI", fetch.url), ("WARC-Payload-Digest", EMPTY_PAYLOAD_DIGEST),
            ("WARC-Block-Digest", sha1_digest(fetch.request)),
        ], fetch.request))
        _, _, payload = fetch.response.partition(b"\r\n\r\n")
        response_headers = [
            ("WARC-Type", "response"), ("WARC-Date", warc_date(fetch.date)), ("WARC-Record-ID", fetch.response_id),
            ("Content-Type", "application/http; msgtype=response"), *common,
            ("WARC-Concurrent-To", request_id), ("WARC-IP-Address", fetch.ip), ("WARC-Target-URI", fetch.url),
            ("WARC-Payload-Digest", sha1_digest(payload)), ("WARC-Block-Digest", sha1_digest(fetch.response)),
        ]
        if fetch.payload_type:
            response_headers.append(("WARC-Identified-Payload-Type", fetch.payload_type))
        response_offset = self._offset
        member = gzip.compress(_record(response_headers, fetch.response), compresslevel=GZIP_LEVEL, mtime=0)
        if cut_response:
            self._append(member[:len(member) // 2])
            return response_offset
        self._append(member)
        metadata = f"fetchTimeMs: {fetch.fetch_time_ms}\r\n".encode("ascii")
        self._write_member(_record([
            ("WARC-Type", "metadata"), ("WARC-Date", warc_date(fetch.date)), ("WARC-Record-ID", self._ids.new()),
            ("Content-Type", "application/warc-fields"), *common, ("WARC-Concurrent-To", fetch.response_id),
            ("WARC-Target-URI", fetch.url), ("WARC-Payload-Digest", sha1_digest(metadata)),
            ("WARC-Block-Digest", sha1_digest(metadata)),
        ], metadata))
        return response_offset

    def close(self) -> ShardSummary:
        self._file.close()
        return ShardSummary(self.path.name, self._offset, self._sha256.hexdigest(), self._records)

    def _write_member(self, record: bytes) -> None:
        self._append(gzip.compress(record, compresslevel=GZIP_LEVEL, mtime=0))

    def _append(self, member: bytes) -> None:
        self._file.write(member)
        self._sha256.update(member)
        self._offset += len(member)
        self._records += 1


def _record(headers: list[tuple[str, str]], block: bytes) -> bytes:
    """Header fields in Common Crawl's order: type, date and ID first, then Content-Length and the rest."""
    fields = headers[:3] + [("Content-Length", str(len(block)))] + headers[3:]
    head = WARC_VERSION + "\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fields) + "\r\n"
    return head.encode("utf-8") + block + b"\r\n\r\n"
