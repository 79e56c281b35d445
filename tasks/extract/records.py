"""Streaming, fault-tolerant reading of WARC / WET / ARC files.

`read_records` yields `RawRecord`s and, in between, `ReadProblem`s for anything it had to skip, each with
the byte offset where it happened. WARC files (plain, gzip, lz4, zstd) are read with FastWARC in strict
mode; when a record is corrupt the reader resynchronises at the next gzip member (per-record gzip, as
Common Crawl writes) or at the next `WARC/1.` header line (plain WARC), so good records after a corruption
are kept too. ARC files go through warcio, which converts them to WARC records.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import fsspec
from fastwarc.warc import ArchiveIterator as FastArchiveIterator

GZIP_MEMBER_START = b"\x1f\x8b\x08"
WARC_HEADER_START = b"WARC/1."
LZ4_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SEARCH_CHUNK = 1 << 20
SNIFF_BYTES = 4096


@dataclass(slots=True)
class RawRecord:
    offset: int                # where the record (or its gzip member) starts in the file
    record_type: str           # response, resource, conversion, revisit, request, metadata, warcinfo, ...
    record_id: str
    target_uri: str
    date: str
    content_type: str          # the WARC Content-Type (e.g. application/http; msgtype=response)
    declared_length: int
    block: bytes | None        # None when declared_length exceeded the caller's limit (not read)

    @property
    def truncated(self) -> bool:
        """The file ended (or the gzip member broke off) before the declared Content-Length."""
        return self.block is not None and len(self.block) < self.declared_length


@dataclass(slots=True)
class ReadProblem:
    reason: str                # corrupt_record | unreadable_tail | unreadable_file
    offset: int
    detail: str


def read_records(url: str, max_block_bytes: int, storage_options: dict | None = None
                 ) -> Iterator[RawRecord | ReadProblem]:
    with fsspec.open(url, "rb", **(storage_options or {})) as handle:
        head = handle.read(SNIFF_BYTES)
        handle.seek(0)
        kind = archive_kind(head)
        if kind == "unreadable":
            yield ReadProblem("unreadable_file", 0, f"not a WARC, WET or ARC file (starts with {head[:16]!r})")
        elif kind == "arc":
            yield from _read_with_warcio(handle, max_block_bytes)
        else:
            yield from _read_with_fastwarc(handle, kind, max_block_bytes)


def archive_kind(head: bytes) -> str:
    """gzip | lz4 | zstd | plain for WARC files, arc for ARC (or anything else warcio may read)."""
    if head.startswith(GZIP_MEMBER_START[:2]):
        try:
            inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head)
        except zlib.error:
            inner = b""
        return "gzip" if inner.startswith(b"WARC/") or not inner else "arc"
    if head.startswith(LZ4_MAGIC):
        return "lz4"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(b"WARC/"):
        return "plain"
    if head.startswith(b"filedesc://"):
        return "arc"
    return "unreadable"


def _read_with_fastwarc(handle: BinaryIO, kind: str, max_block_bytes: int) -> Iterator[RawRecord | ReadProblem]:
    resync_marker = {"gzip": GZIP_MEMBER_START, "plain": WARC_HEADER_START}.get(kind)
    position, in_corrupt_region = 0, False
    while True:
        handle.seek(position)
        last_start, failed = None, False
        try:
            for record in FastArchiveIterator(handle, parse_http=False, fsspec_args=False):
                last_start = record.stream_pos
                converted = _from_fastwarc(record, max_block_bytes)
                in_corrupt_region = False
                yield converted
                if converted.truncated:
                    break  # a wrong Content-Length swallows what follows: look for the next record start
            else:
                return
        except (OSError, ValueError, EOFError) as error:
            failed = True
            # A restart that fails before its first record is the same damaged stretch: report it once.
            if not in_corrupt_region:
                yield ReadProblem("corrupt_record", position if last_start is None else last_start,
                                  f"{type(error).__name__}: {error}")
            in_corrupt_region = True
        resume_from = (position if last_start is None else last_start) + 1
        if resync_marker is None:
            if failed:
                yield ReadProblem("unreadable_tail", resume_from - 1, f"cannot resynchronise a {kind} stream")
            return
        found = _find(handle, resync_marker, resume_from)
        if found is None:
            return
        position = found


def _from_fastwarc(record, max_block_bytes: int) -> RawRecord:
    headers = record.headers
    length = record.content_length
    block = record.reader.read() if length <= max_block_bytes else None
    return RawRecord(
        offset=record.stream_pos,
        record_type=str(record.record_type),
        record_id=headers.get("WARC-Record-ID", "") or "",
        target_uri=(headers.get("WARC-Target-URI", "") or "").strip("<> "),
        date=headers.get("WARC-Date", "") or "",
        content_type=headers.get("Content-Type", "") or "",
        declared_length=length,
        block=block,
    )


def _find(handle: BinaryIO, marker: bytes, start: int) -> int | None:
    """Offset of the next `marker` at or after `start`, scanning forward in chunks."""
    handle.seek(start)
    base, carry = start, b""
    while chunk := handle.read(SEARCH_CHUNK):
        window = carry + chunk
        hit = window.find(marker)
        if hit >= 0:
            return base - len(carry) + hit
        carry = window[-(len(marker) - 1):]
        base += len(chunk)
    return None


def _read_with_warcio(handle: BinaryIO, max_block_bytes: int) -> Iterator[RawRecord | ReadProblem]:
    from warcio.archiveiterator import ArchiveIterator as WarcioIterator

    iterator = WarcioIterator(handle, arc2warc=True, no_record_parse=True)
    offset = 0
    try:
        for record in iterator:
            headers = record.rec_headers
            length = int(headers.get_header("Content-Length") or record.length or 0)
            block = record.raw_stream.read() if length <= max_block_bytes else None
            offset = iterator.get_record_offset()  # only valid once the record's content has been read
            yield RawRecord(
                offset=offset,
                record_type=record.rec_type or "unknown",
                record_id=headers.get_header("WARC-Record-ID") or "",
                target_uri=(headers.get_header("WARC-Target-URI") or "").strip("<> "),
                date=headers.get_header("WARC-Date") or "",
                content_type=headers.get_header("Content-Type") or "",
                declared_length=length,
                block=block,
            )
    except Exception as error:  # warcio raises many types on damaged input (ArchiveLoadFailed, zlib, EOF ...)
        yield ReadProblem("corrupt_record", offset, f"{type(error).__name__}: {error}")
        yield ReadProblem("unreadable_tail", offset, "ARC stream cannot be resynchronised; rest of file skipped")
