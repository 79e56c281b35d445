"""The generated WARC corpus: layout, determinism, record-level correctness and the ground-truth labels."""
from __future__ import annotations

import hashlib
import json
import random
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from fastwarc.warc import ArchiveIterator, WarcRecordType

from configs.html import HtmlTextConfig
from dev.corpus.captures import Capture
from dev.corpus.context import BuildContext, HostProfiles, TemplateSupply
from dev.corpus.generate import generate_corpus
from dev.corpus.html_edit import main_paragraphs
from dev.corpus.http_message import parse_response
from dev.corpus.originals import transplanted_original
from dev.corpus.passages import PassagePool, passage_paragraphs
from dev.corpus.real_captures import label_near_identical_texts
from dev.corpus.similarity import jaccard, main_text, shingles
from dev.corpus.sources import load_source_pages
from dev.corpus.urls import UrlRegistry
from tasks.extract.html_text import html_to_text

KINDS_THAT_MUST_APPEAR = ("original", "exact_dup", "near_dup", "spam", "boilerplate_heavy", "non_html", "redirect",
                          "not_found", "server_error", "bad_charset", "real_cc", "truncated")
JACCARD_BAND = 0.05
TEMPLATES_TRIED = 150


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_dir) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    generate_corpus(out, "small", seed=0, data_dir=data_dir)
    return out


@pytest.fixture(scope="module")
def labels(corpus) -> list[dict]:
    return [json.loads(line) for line in (corpus / "labels.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def responses(corpus) -> dict[str, bytes]:
    """Record ID -> stored HTTP response block, for every complete response record."""
    blocks = {}
    for shard in sorted((corpus / "warc").iterdir()):
        with shard.open("rb") as stream:
            for record in ArchiveIterator(stream, parse_http=False, record_types=WarcRecordType.response):
                block = record.reader.read()
                if len(block) == record.content_length:
                    blocks[record.record_id] = block
    return blocks


def _digests(out: Path) -> dict[str, str]:
    files = [out / "labels.jsonl", out / "corpus.json", *sorted((out / "warc").iterdir())]
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def test_unknown_size_names_the_allowed_ones(tmp_path, data_dir):
    with pytest.raises(ValueError, match="bench, small"):
        generate_corpus(tmp_path, "huge", data_dir=data_dir)


def test_same_seed_gives_identical_bytes_and_another_seed_does_not(corpus, tmp_path, data_dir):
    generate_corpus(tmp_path / "again", "small", seed=0, data_dir=data_dir)
    generate_corpus(tmp_path / "other", "small", seed=1, data_dir=data_dir)
    assert _digests(tmp_path / "again") == _digests(corpus)
    other = _digests(tmp_path / "other")
    assert not set(other.values()) & set(_digests(corpus).values())


def test_summary_describes_the_files(corpus, labels):
    summary = json.loads((corpus / "corpus.json").read_text())
    shards = sorted((corpus / "warc").iterdir())
    assert [s["file"] for s in summary["shards"]] == [p.name for p in shards]
    assert [p.name for p in shards] == [f"CC-SLUICE-0-{i:05d}.warc.gz" for i in range(4)]
    for entry, path in zip(summary["shards"], shards):
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert entry["bytes"] == path.stat().st_size
    assert summary["counts"] == dict(sorted(Counter(label["kind"] for label in labels).items()))
    assert summary["responses"] == len(labels)


def test_every_label_points_at_its_response_record(corpus, labels):
    for entry in labels:
        with (corpus / "warc" / entry["warc_file"]).open("rb") as stream:
            stream.seek(entry["offset"])
            record = next(iter(ArchiveIterator(stream, parse_http=False)), None)
            if entry["truncated"]:     # the cut member yields nothing or an incomplete record
                assert record is None or len(record.reader.read()) < record.content_length
                continue
            assert record.record_id == entry["record_id"]
            assert record.headers["WARC-Type"] == "response"
            assert record.headers["WARC-Target-URI"] == entry["url"]


def test_records_before_the_truncated_tail_parse_strictly_with_valid_digests(corpus, labels):
    expected = Counter(entry["warc_file"] for entry in labels if not entry["truncated"])
    truncated = [entry for entry in labels if entry["truncated"]]
    assert len(truncated) == 1 and truncated[0]["warc_file"] == sorted(expected)[-1]
    for shard in sorted((corpus / "warc").iterdir()):
        types, request_uris, responses = [], {}, 0
        with shard.open("rb") as stream:
            for record in ArchiveIterator(stream, parse_http=False, verify_digests=True):
                kind = record.headers["WARC-Type"]
                types.append(kind)
                if kind == "request":
                    request_uris[record.record_id] = record.headers["WARC-Target-URI"]
                if kind == "response" and len(record.reader.read()) == record.content_length:
                    responses += 1
                    assert request_uris[record.headers["WARC-Concurrent-To"]] == record.headers["WARC-Target-URI"]
        assert types[0] == "warcinfo"
        assert responses == expected[shard.name]
        assert types.count("metadata") == expected[shard.name]


def test_all_important_kinds_appear_and_most_pages_are_ordinary(labels):
    counts = Counter(entry["kind"] for entry in labels)
    assert all(counts[kind] > 0 for kind in KINDS_THAT_MUST_APPEAR), counts
    assert 0.55 <= counts["original"] / len(labels) <= 0.75


def test_near_duplicates_hit_their_targets_when_measured_again(labels, responses):
    originals = {e["dup_cluster"]: e for e in labels if e["kind"] == "original" and e["dup_cluster"]}
    near = [e for e in labels if e["kind"] == "near_dup"]
    assert {e["target_jaccard"] for e in near} == {0.9, 0.8, 0.7, 0.5}

    def text(entry):
        return main_text(parse_response(responses[entry["record_id"]]).body.decode("utf-8"))

    for entry in near:
        assert abs(entry["measured_jaccard"] - entry["target_jaccard"]) <= JACCARD_BAND
        measured = jaccard(shingles(text(originals[entry["dup_cluster"]])), shingles(text(entry)))
        assert measured == pytest.approx(entry["measured_jaccard"], abs=1e-4)


def test_exact_duplicates_repeat_the_original_payload(labels, responses):
    clusters = defaultdict(list)
    for entry in labels:
        if entry["dup_cluster"] and entry["kind"] in ("original", "exact_dup"):
            clusters[entry["dup_cluster"]].append(entry)
    for entry in labels:
        if entry["kind"] == "exact_dup":
            original = next(e for e in clusters[entry["dup_cluster"]] if e["kind"] == "original")
            copy_body = parse_response(responses[entry["record_id"]]).body
            assert copy_body == parse_response(responses[original["record_id"]]).body


def test_charset_labels_describe_the_served_bytes(labels, responses):
    for entry in labels:
        if entry["truncated"] or entry["kind"] == "real_cc" or not entry["content_type"]:
            continue
        http = parse_response(responses[entry["record_id"]])
        assert http.charset == entry["charset_declared_http"]
        if entry["charset_actual"] and not entry["invalid_bytes"]:
            http.body.decode(entry["charset_actual"])
        elif entry["invalid_bytes"]:
            with pytest.raises(UnicodeDecodeError):
                http.body.decode(entry["charset_actual"])
    traps = [e for e in labels if e["kind"] == "bad_charset"]
    assert any(e["charset_declared_http"] not in (None, e["charset_actual"]) for e in traps)
    assert any(e["charset_declared_http"] is None and e["charset_declared_meta"] is None for e in traps)
    assert any(e["charset_declared_http"] is None and e["charset_declared_meta"] for e in traps)
    assert any(e["invalid_bytes"] for e in traps)


def test_only_complete_html_200_responses_are_expected_documents(labels):
    for entry in labels:
        html_200 = entry["http_status"] == 200 and entry["content_type"] in ("text/html", "application/xhtml+xml")
        assert entry["expect_document"] == (html_200 and not entry["truncated"])
    statuses = {entry["http_status"] for entry in labels if not entry["expect_document"]}
    assert {404, 200} <= statuses and any(300 <= s < 400 for s in statuses) and any(s >= 500 for s in statuses)


def test_article_slots_are_prose_paragraphs_outside_captions_sidebars_menus_headers_and_footers():
    sentence = "This paragraph is long enough to be a sentence of the article."
    page = ("<html><body><header><p>Header {0}</p></header><nav><p>Menu {0}</p></nav>"
            "<figure><img src=x><figcaption><p>Caption {0}</p></figcaption></figure>"
            "<article><p>First {0}</p><p>Second {0}</p></article>"
            "<aside><p>Sidebar {0}</p></aside><footer><p>Footer {0}</p></footer></body></html>").format(sentence)
    assert [p.text.split()[0] for p in main_paragraphs(page)] == ["First", "Second"]


def test_an_article_written_into_any_template_is_in_the_pipelines_text(data_dir):
    # An article written where the extractor does not look (a photo caption) is lost to it, and two such pages
    # of one template come out as the same site chrome: duplicates the labels would call distinct originals.
    pages = load_source_pages(data_dir)
    templates = TemplateSupply(pages, random.Random(0))
    ctx = BuildContext(rng=random.Random(0), pool=PassagePool(data_dir, random.Random(0)), urls=UrlRegistry(),
                       templates=templates, profiles=HostProfiles(0), crawl_year=2020)
    config, lost = HtmlTextConfig(), []
    for _ in range(TEMPLATES_TRIED):          # new templates come first, each once
        capture = transplanted_original(ctx)
        text = " ".join(html_to_text(capture.body.decode("utf-8"), config).split())
        paragraphs = passage_paragraphs(Path(data_dir), capture.body_source)
        if sum(" ".join(paragraph.split())[:80] in text for paragraph in paragraphs) < len(paragraphs) / 2:
            lost.append(capture.source_page)
    assert len(lost) <= 1, lost


def test_real_pages_as_similar_as_a_generated_near_copy_share_their_first_pages_cluster():
    words = [f"w{number}" for number in range(300)]

    def page(*spans: tuple[int, int]) -> Capture:
        text = " ".join(" ".join(words[start:end]) for start, end in spans)
        return Capture(kind="real_cc", url="http://example.org/", status=200, body=f"<p>{text}</p>".encode(),
                       content_type="text/html")

    first, copy, chained, other = page((0, 100)), page((0, 80), (200, 220)), page((0, 60), (200, 240)), \
        page((100, 200))
    # copy ~ first (J 0.66); chained ~ copy (J 0.60) but not ~ first (J 0.41): a site's pages, not one page's copies
    label_near_identical_texts([first, copy, chained, other])
    assert first.dup_cluster is not None and copy.dup_cluster == first.dup_cluster
    assert chained.dup_cluster is None and other.dup_cluster is None
