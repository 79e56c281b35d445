"""Every malformed or unusual file in ../shared/data/warc/edge_cases goes through extraction without crashing;
each problem is counted under a named reason, and good records before and after a corruption are kept."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from configs.schema import ExtractConfig
from storage.document_shard import read_documents
from tasks.extract.shard import ShardJob, extract_shard

EDGE_CASES = "warc/edge_cases"
CC_SAMPLE = "warc/commoncrawl/chatnoir-resiliparse/warcfile.warc.gz"

# file -> (problems that must be reported, minimum documents that must come out)
EXPECTED = {
    # two responses without an HTTP head, then a record whose length field reads 'abc'
    "warcio/bad.arc": ({"bad_http", "corrupt_record", "unreadable_tail"}, 0),
    "warcio/example-bad-non-chunked.warc.gz": (set(), 1),
    "warcio/example-bad.warc.gz.bad": (set(), 1),
    "warcio/example-digest.warc": (set(), 0),
    "warcio/example-iana.org-chunked.warc": (set(), 1),
    "warcio/example-resource.warc.gz": (set(), 1),
    "warcio/example-space-in-target-uri.warc.gz": (set(), 0),
    # the record holds 12 bytes fewer than its ARC header declares
    "warcio/example-space-in-url.arc": ({"truncated_record"}, 0),
    "warcio/example-trunc.warc": ({"corrupt_record"}, 1),
    "warcio/example-wget-bad-target-uri.warc.gz": (set(), 1),
    "warcio/example-wrong-chunks.warc.gz": (set(), 0),
    "warcio/example.arc": (set(), 1),
    "warcio/example.arc.gz": (set(), 1),
    "warcio/example.warc": (set(), 1),
    "warcio/example.warc.gz": (set(), 1),
    "warcio/post-test.warc.gz": (set(), 0),
    "chatnoir-resiliparse/block-sized-records.warc.gz": (set(), 0),
    "chatnoir-resiliparse/clipped.warc.gz": ({"truncated_record"}, 0),
    "chatnoir-resiliparse/warcfile.warc.lz4": (set(), 10),
    # its first response is a 56-byte `dns:` lookup (dropped as non_http_response); the other 7 are pages
    "ukwa-webarchive-discovery/IAH-20080430204825-00000-blackbook-truncated.arc.gz": (set(), 1),
    "ukwa-webarchive-discovery/ip-host-testcase.warc.gz": (set(), 0),  # a 404 page: dropped, not a problem
    "ukwa-webarchive-discovery/transfer_compression_brotli.warc.gz": (set(), 1),
    "ukwa-webarchive-discovery/transfer_compression_gzip.warc.gz": (set(), 1),
    "ukwa-webarchive-discovery/transfer_compression_none.warc.gz": (set(), 1),
    "ukwa-webarchive-discovery/truncated_datetime.warc": (set(), 1),
}


def _extract(path: Path, out_dir: Path, lid_model: str, caplog) -> tuple[dict, list[str]]:
    job = ShardJob(str(path), str(out_dir / "shard.parquet"), "edge", lid_model)
    with caplog.at_level(logging.WARNING, logger="edge-test"):
        stats = extract_shard(job, ExtractConfig(), logging.getLogger("edge-test"))
    return stats, [record.getMessage() for record in caplog.records]


def _assert_nothing_lost(stats: dict) -> None:
    assert stats["candidates"] == stats["documents_out"] + sum(stats["drops"].values())


def test_every_edge_case_file_is_listed(data_dir):
    on_disk = {p.relative_to(data_dir / EDGE_CASES).as_posix()
               for p in (data_dir / EDGE_CASES).rglob("*") if p.is_file()}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_edge_case_file(name, data_dir, lid_model, tmp_path, caplog):
    problems, min_docs = EXPECTED[name]
    stats, messages = _extract(data_dir / EDGE_CASES / name, tmp_path, lid_model, caplog)
    _assert_nothing_lost(stats)
    assert set(stats["problems"]) == problems
    assert stats["documents_out"] >= min_docs
    assert len(read_documents(str(tmp_path / "shard.parquet"))) == stats["documents_out"]
    for reason in problems:  # logged with the file and the offset
        assert any(reason in message and name.rsplit("/", 1)[-1] in message and "offset" in message
                   for message in messages), messages


def _baseline(data_dir, lid_model, tmp_path, caplog) -> dict:
    stats, _ = _extract(data_dir / CC_SAMPLE, tmp_path / "baseline", lid_model, caplog)
    assert not stats["problems"] and stats["documents_out"] >= 10
    return stats


def test_corrupt_gzip_member_keeps_records_before_and_after(data_dir, lid_model, tmp_path, caplog):
    baseline = _baseline(data_dir, lid_model, tmp_path, caplog)
    raw = bytearray((data_dir / CC_SAMPLE).read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 200] = bytes(b ^ 0x55 for b in raw[middle:middle + 200])
    damaged = tmp_path / "damaged.warc.gz"
    damaged.write_bytes(bytes(raw))
    stats, messages = _extract(damaged, tmp_path / "damaged", lid_model, caplog)
    _assert_nothing_lost(stats)
    assert stats["problems"] == {"corrupt_record": 1}
    assert any("damaged.warc.gz @ offset" in message for message in messages)
    # one record is lost to the damage; the records after it are read again
    assert baseline["records_read"] - 2 <= stats["records_read"] < baseline["records_read"]
    offsets = read_documents(str(tmp_path / "damaged" / "shard.parquet")).column("warc_offset").to_pylist()
    assert min(offsets) < middle < max(offsets)


def test_truncated_gzip_tail_keeps_every_complete_record(data_dir, lid_model, tmp_path, caplog):
    baseline = _baseline(data_dir, lid_model, tmp_path, caplog)
    raw = (data_dir / CC_SAMPLE).read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(raw[: int(len(raw) * 0.75)])
    stats, _ = _extract(cut, tmp_path / "cut", lid_model, caplog)
    _assert_nothing_lost(stats)
    assert set(stats["problems"]) <= {"truncated_record"}
    assert 0 < stats["documents_out"] < baseline["documents_out"]


def test_a_wrong_content_length_does_not_swallow_the_records_after_it(data_dir, tmp_path):
    from tasks.extract.records import RawRecord, ReadProblem, read_records

    raw = (data_dir / EDGE_CASES / "warcio/example.warc").read_bytes()
    good = [r for r in read_records(str(data_dir / EDGE_CASES / "warcio/example.warc"), 1 << 20)]
    first_length = raw.index(b"Content-Length: ") + len(b"Content-Length: ")
    end = raw.index(b"\r\n", first_length)
    damaged = tmp_path / "long.warc"
    damaged.write_bytes(raw[:first_length] + b"999999" + raw[end:])  # the first record claims the whole file
    items = list(read_records(str(damaged), 1 << 20))
    records = [item for item in items if isinstance(item, RawRecord)]
    assert records[0].truncated
    assert [r.record_id for r in records[1:]] == [r.record_id for r in good[1:]]
    assert not [item for item in items if isinstance(item, ReadProblem)]
