"""HTTP responses from the real crawls in the data set (Common Crawl, Internet Archive, wget), copied verbatim."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from datetime import datetime, timezone
from pathlib import Path

from fastwarc.warc import ArchiveIterator, WarcRecordType

from dev.corpus.http_message import ParsedResponse, parse_response

REAL_WARCS = (
    "warc/commoncrawl/whirlwind-python/whirlwind.warc.gz",
    "warc/commoncrawl/chatnoir-resiliparse/warcfile.warc.gz",
    "warc/webarchive/allenai-dolma/sample-0000.warc.gz",
    "warc/webarchive/allenai-dolma/sample-0001.warc.gz",
    "warc/webarchive/archivesunleashed-aut/example.warc.gz",
)


@dataclass(frozen=True)
class RealResponse:
    warc: str               # file under the data directory it was copied from
    record_id: str
    url: str
    date: datetime
    ip: str | None
    block: bytes            # the stored HTTP response, byte for byte
    http: ParsedResponse

    @property
    def is_html(self) -> bool:
        return (self.http.mime_type or "") in ("text/html", "application/xhtml+xml")


@lru_cache(maxsize=2)
def load_real_responses(data_dir: Path) -> tuple[RealResponse, ...]:
    """Every response to an http(s) URL in the real WARCs (DNS lookups and non-HTTP blocks left out)."""
    responses = []
    for warc in REAL_WARCS:
        with (data_dir / warc).open("rb") as stream:
            for record in ArchiveIterator(stream, parse_http=False, record_types=WarcRecordType.response):
                url = record.headers.get("WARC-Target-URI", "").strip("<>")   # wget writes <url>
                block = record.reader.read()
                http = parse_response(block)
                if http is None or not url.startswith(("http://", "https://")):
                    continue
                date = datetime.strptime(record.headers["WARC-Date"], "%Y-%m-%dT%H:%M:%SZ")
                responses.append(RealResponse(warc, record.record_id, url, date.replace(tzinfo=timezone.utc),
                                              record.headers.get("WARC-IP-Address"), block, http))
    return tuple(responses)
