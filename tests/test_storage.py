import json

import numpy as np
import pytest

from storage.document_shard import DOCUMENT_SCHEMA, read_documents, write_documents
from storage.fs import atomic_output, expand_inputs, remove_folder
from storage.manifest import Manifest, ShardEntry, sha256_file
from storage.stage_store import StageStore, stage_fingerprint
from storage.token_shard import TokenShard, TokenShardWriter, token_dtype


def test_token_shard_round_trip_uint16(tmp_path):
    writer = TokenShardWriter(tmp_path / "shard", vocab_size=32000)
    docs = [[1, 2, 3], [], [31999, 0]]
    for doc in docs:
        writer.add_document(doc)
    writer.close()
    shard = TokenShard(tmp_path / "shard")
    assert shard.tokens.dtype == np.dtype("<u2")
    assert len(shard) == 3 and shard.num_tokens == 5
    assert [shard.document(i).tolist() for i in range(3)] == docs


def test_token_shard_switches_to_uint32_above_65536():
    assert token_dtype(65536) == np.dtype("<u2")
    assert token_dtype(65537) == np.dtype("<u4")


def test_token_shard_rejects_out_of_range_ids_and_damaged_files(tmp_path):
    writer = TokenShardWriter(tmp_path / "s", vocab_size=100)
    with pytest.raises(ValueError, match="out of range"):
        writer.add_document([5, 100])
    writer.add_document([5, 6, 7])
    bin_path, _ = writer.close()
    raw = bin_path.read_bytes()
    bin_path.write_bytes(raw[:-2])
    with pytest.raises(ValueError, match="header promises"):
        TokenShard(tmp_path / "s")
    bin_path.write_bytes(b"NOTSLUIC" + raw[8:])
    with pytest.raises(ValueError, match="not a sluice token shard"):
        TokenShard(tmp_path / "s")


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out" / "file.txt"
    with pytest.raises(RuntimeError):
        with atomic_output(str(target)) as tmp:
            with open(tmp, "w") as handle:
                handle.write("half")
            raise RuntimeError("killed")
    assert not target.exists()
    assert list((tmp_path / "out").iterdir()) == []
    with atomic_output(str(target)) as tmp:
        with open(tmp, "w") as handle:
            handle.write("whole")
    assert target.read_text() == "whole"


def test_remove_folder_reports_what_it_held(tmp_path):
    (tmp_path / "work" / "b00001").mkdir(parents=True)
    (tmp_path / "work" / "a.bin").write_bytes(b"x" * 10)
    (tmp_path / "work" / "b00001" / "e.parquet").write_bytes(b"y" * 2_000)
    assert remove_folder(str(tmp_path / "work")) == {"bytes": 2_010, "files": 2}
    assert not (tmp_path / "work").exists()


def test_document_shard_round_trip(tmp_path):
    rows = {"id": ["a", "b"], "url": ["http://x/1", "http://x/2"], "text": ["hello", "wörld"],
            "lang": ["en", "de"], "lang_score": [0.9, 0.8], "source": ["t", "t"],
            "warc_path": ["f.warc.gz"] * 2, "warc_record_id": ["<urn:1>", "<urn:2>"], "warc_offset": [0, 10],
            "warc_date": ["2024", "2024"], "charset": ["utf-8", "cp1252"]}
    url = str(tmp_path / "shards" / "s.parquet")
    assert write_documents(rows, url) > 0
    table = read_documents(url)
    assert table.column("text").to_pylist() == ["hello", "wörld"]
    assert table.schema.equals(DOCUMENT_SCHEMA)


def test_manifest_and_stage_store(tmp_path):
    store = StageStore(str(tmp_path / "store"))
    fingerprint = stage_fingerprint("extract", {"a": 1}, [{"url": "x", "size": 3}], "code1")
    assert fingerprint != stage_fingerprint("extract", {"a": 2}, [{"url": "x", "size": 3}], "code1")
    assert fingerprint != stage_fingerprint("extract", {"a": 1}, [{"url": "x", "size": 3}], "code2")
    assert store.find("extract", fingerprint) is None
    shard = tmp_path / "store" / "extract" / fingerprint / "shards" / "a.parquet"
    shard.parent.mkdir(parents=True)
    shard.write_bytes(b"data")
    manifest = Manifest(stage="extract", fingerprint=fingerprint, config={"a": 1}, code_version="code1",
                        parents=[], shards=[ShardEntry("shards/a.parquet", 4, sha256_file(str(shard)), 1)],
                        stats={"documents_out": 1})
    url = store.publish(manifest)
    found = store.find("extract", fingerprint)
    assert found is not None and found.digest() == manifest.digest()
    assert json.loads(open(url).read())["shards"][0]["sha256"] == sha256_file(str(shard))


def test_expand_inputs_names_the_pattern_that_matched_nothing(tmp_path):
    (tmp_path / "a.warc.gz").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("")
    assert expand_inputs([str(tmp_path)]) == [str(tmp_path / "a.warc.gz")]
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        expand_inputs([str(tmp_path / "nothing-here" / "*.warc.gz")])


def test_numbered_token_shards_do_not_collide(tmp_path):
    for number in (1, 2):
        writer = TokenShardWriter(tmp_path / f"train.{number:05d}", vocab_size=10)
        writer.add_document([number])
        writer.close()
    assert TokenShard(tmp_path / "train.00001").document(0).tolist() == [1]
    assert TokenShard(tmp_path / "train.00002").document(0).tolist() == [2]
