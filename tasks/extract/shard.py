"""The extraction stage over one WARC shard: records -> payloads -> text -> language ID.

Each document's text is a function of its record alone (no pass over its neighbours in the shard), so identical
payloads give identical texts wherever they sit; lines repeated across many documents are removed at corpus
level by the dedup stage. Writes one Parquet document shard (atomically) plus a `.stats.json` sidecar written
after it; a rerun of the same stage directory finds the sidecar and returns the recorded stats.
"""
from __future__ import annotations

import functools
import logging
import os
import time
from dataclasses import dataclass

import fsspec

from configs.schema import ExtractConfig
from storage.document_shard import DOCUMENT_SCHEMA, write_documents
from storage.manifest import sha256_file
from tasks.extract.documents import NotADocument, document_id, is_candidate, payload_of
from tasks.extract.html_text import html_to_text
from tasks.extract.langid import LanguageIdentifier
from tasks.extract.records import RawRecord, ReadProblem, read_records
from tasks.extract.url_filter import UrlFilter, load_blocklist
from tasks.resumable import run_once, shard_record_url
from tasks.shard_result import ShardResult
from tasks.stats import StageStats

# Drop reasons that mean the input itself is damaged: also counted as problems and logged as warnings.
DAMAGE_REASONS = frozenset({"truncated_record", "bad_http"})


@dataclass(frozen=True)
class ShardJob:
    input_url: str
    output_url: str
    source: str
    lid_model_path: str
    storage_options: tuple = ()

    @property
    def warc_name(self) -> str:
        return os.path.basename(self.input_url)


def extract_shard(job: ShardJob, config: ExtractConfig, log: logging.Logger | logging.LoggerAdapter) -> dict:
    """Run extraction for one input file; returns the shard's stats dict (plus output path and resume flag)."""
    return run_once(shard_record_url(job.output_url), lambda: _extract(job, config, log))


def _extract(job: ShardJob, config: ExtractConfig, log: logging.Logger | logging.LoggerAdapter) -> dict:
    started = time.perf_counter()
    stats = StageStats()
    url_filter = _url_filter(tuple(config.url_filter.blocked_domains), tuple(config.url_filter.blocklist_files),
                             tuple(config.url_filter.blocked_url_words))
    kept: list[KeptDocument] = []
    for item in read_records(job.input_url, config.max_payload_bytes, dict(job.storage_options)):
        if isinstance(item, ReadProblem):
            stats.problems[item.reason] += 1
            log.warning("%s @ offset %d: %s (%s)", job.input_url, item.offset, item.reason, item.detail)
            continue
        stats.records_read += 1
        stats.notes[f"record_{item.record_type}"] += 1
        if not is_candidate(item):
            continue
        stats.candidates += 1
        try:
            document = _document_of(item, job, config, url_filter, stats, log)
        except Exception as error:  # a bug or a library failure on one record costs that record, not the shard
            stats.drop("extract_error")
            stats.problems["extract_error"] += 1
            log.warning("%s @ offset %d: extract_error (%s: %s)", job.input_url, item.offset,
                        type(error).__name__, error)
            continue
        if document is not None:
            kept.append(document)


    identifier = LanguageIdentifier(job.lid_model_path, config.langid.max_chars)
    columns: dict[str, list] = {name: [] for name in DOCUMENT_SCHEMA.names}
    allowed = set(config.langid.languages)
    for document in kept:
        text = document.text
        text_bytes = len(text.encode("utf-8", "surrogatepass"))
        if len(text.strip()) < config.min_text_chars:
            stats.drop("too_short", text_bytes)
            continue
        lang, score = identifier.predict(text)
        if score < config.langid.min_score:
            stats.drop("lang_low_score", text_bytes)
            continue
        if allowed and lang not in allowed:
            stats.drop("lang_not_allowed", text_bytes)
            continue
        record = document.record
        for name, value in (("id", document_id(record, job.warc_name)), ("url", record.target_uri),
                            ("text", text), ("lang", lang), ("lang_score", score), ("source", job.source),
                            ("warc_path", job.input_url), ("warc_record_id", record.record_id),
                            ("warc_offset", record.offset), ("warc_date", record.date),
                            ("charset", document.charset)):
            columns[name].append(value)
        stats.notes[f"lang_{lang}"] += 1
        stats.bytes_out += text_bytes
    stats.documents_out = len(columns["id"])
    shard_bytes = write_documents(columns, job.output_url)

    in_fs, in_path = fsspec.core.url_to_fs(job.input_url, **dict(job.storage_options))
    stats.bytes_in = int(in_fs.size(in_path))
    stats.seconds = time.perf_counter() - started
    return ShardResult((job.input_url,), job.output_url, shard_bytes, sha256_file(job.output_url), stats).to_dict()


@dataclass(slots=True)
class KeptDocument:
    """What the rest of the shard pass needs of a document; the raw block and markup are let go."""
    record: RawRecord
    charset: str
    text: str


def _document_of(record: RawRecord, job: ShardJob, config: ExtractConfig, url_filter: UrlFilter,
                 stats: StageStats, log) -> KeptDocument | None:
    """The record's extracted text and provenance, or None after counting why it was dropped."""
    blocked = url_filter.blocked_reason(record.target_uri)
    if blocked:
        stats.drop(blocked)
        return None
    try:
        payload = payload_of(record, config.max_payload_bytes)
    except NotADocument as skip:
        stats.drop(skip.reason)
        if skip.reason in DAMAGE_REASONS:
            stats.problems[skip.reason] += 1
            log.warning("%s @ offset %d: %s (%s)", job.input_url, record.offset, skip.reason, skip.detail)
        return None
    stats.notes[f"charset_from_{payload.charset_source}"] += 1
    if payload.charset_replaced:
        stats.problems["charset_invalid_bytes_replaced"] += 1
        log.warning("%s @ offset %d: invalid %s bytes replaced", job.input_url, record.offset, payload.charset)
    text = payload.markup if payload.is_plain_text else html_to_text(payload.markup, config.html)
    if not text.strip():
        stats.drop("empty_text")
        return None
    record.block = None  # the payload bytes are no longer needed; keep the shard's memory to its texts
    return KeptDocument(record, payload.charset, text)


@functools.lru_cache(maxsize=8)
def _url_filter(domains: tuple[str, ...], files: tuple[str, ...], words: tuple[str, ...]) -> UrlFilter:
    """Built once per worker process and blocklist set (EasyList takes ~0.1 s to parse)."""
    blocked = set(domains)
    for url in files:
        blocked |= load_blocklist(url)
    return UrlFilter(blocked, list(words))
