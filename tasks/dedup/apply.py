"""Dedup's last step, per document shard: drop the removed documents, cut repeated substrings and then repeated
paragraphs, add the cluster attributes, and list every removed document with its reason beside the output
(nothing is lost silently), and every duplicate cluster's members with the copy that stays (`clusters/`)."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from configs.dedup import DedupConfig, ParagraphDedupConfig
from storage.arrays import load_array
from storage.document_shard import ROW_GROUP_SIZE, read_documents
from storage.manifest import sha256_file
from storage.parquet import read_table, write_table
from tasks.dedup.clusters import decisions_path
from tasks.dedup.features import doc_numbers
from tasks.dedup.normalize import key64, normalize_lines
from tasks.dedup.paragraphs import repeated_path
from tasks.dedup.substrings import cut_windows, without_windows
from tasks.shard_result import ShardResult
from tasks.stats import StageStats

REMOVED_SCHEMA = pa.schema([("id", pa.string()), ("url", pa.string()), ("reason", pa.string()),
                            ("dup_cluster", pa.string())])
# every member of a duplicate cluster (and every URL duplicate): the cluster is named by the id of the copy that
# stays (a URL duplicate's: its URL's newest capture); similarity to that copy (see tasks.dedup.clusters)
CLUSTER_SCHEMA = pa.schema([("cluster", pa.string()), ("id", pa.string()), ("url", pa.string()),
                            ("kept", pa.bool_()), ("reason", pa.string()), ("cluster_size", pa.int64()),
                            ("similarity", pa.float64())])
TOO_SHORT = "too_short_after_paragraph_dedup"
TOO_SHORT_AFTER_SUBSTRINGS = "too_short_after_substring_dedup"


@dataclass(frozen=True)
class ApplyJob:
    input_url: str
    part: str
    output_url: str
    removed_url: str
    clusters_url: str


def apply_decisions(job: ApplyJob, work: str, config: DedupConfig) -> dict:
    started = time.perf_counter()
    table = read_documents(job.input_url)
    decisions = {row["doc"]: row for bucket in range(config.buckets)
                 for row in read_table(decisions_path(work, job.part, bucket)).to_pylist()}
    repeated = _repeated_keys(work, config) if config.paragraphs.enabled else frozenset()
    windows = cut_windows(work, job.part, config.buckets) if config.substring.enabled else {}
    stats = StageStats(candidates=table.num_rows)

    keep_rows, texts, clusters, sizes, removed, members = [], [], [], [], [], []
    ids, urls = table.column("id").to_pylist(), table.column("url").to_pylist()
    for row, (doc, text) in enumerate(zip(doc_numbers(int(job.part), table.num_rows).tolist(),
                                          table.column("text").to_pylist())):
        text_bytes = len(text.encode("utf-8", "surrogatepass"))
        stats.bytes_in += text_bytes
        decision = decisions.get(doc)
        if decision is not None:
            members.append((decision["dup_cluster"], ids[row], urls[row], decision["kept"],
                            decision["reason"] or f"kept: first by dedup.keep={config.keep}",
                            decision["dup_cluster_size"], decision["similarity"]))
        if decision is not None and not decision["kept"]:
            stats.drop(decision["reason"], text_bytes)
            removed.append((ids[row], urls[row], decision["reason"], decision["dup_cluster"]))
            continue
        if doc in windows:
            text, spans, chars = without_windows(text, windows[doc], config.substring.min_words)
            stats.notes.update(substring_spans_cut=spans, substring_chars_cut=chars, substring_documents_cut=1)
            if len(text.strip()) < config.substring.min_chars_after:
                stats.drop(TOO_SHORT_AFTER_SUBSTRINGS, text_bytes)
                removed.append((ids[row], urls[row], TOO_SHORT_AFTER_SUBSTRINGS, None))
                continue
        kept_text = _without_repeated(text, repeated, config.paragraphs, stats)
        if len(kept_text.strip()) < config.paragraphs.min_chars_after:
            stats.drop(TOO_SHORT, text_bytes)
            removed.append((ids[row], urls[row], TOO_SHORT, None))
            continue
        keep_rows.append(row)
        texts.append(kept_text)
        clusters.append(decision["dup_cluster"] if decision else ids[row])
        sizes.append(decision["dup_cluster_size"] if decision else 1)
        stats.bytes_out += len(kept_text.encode("utf-8", "surrogatepass"))

    output = table.take(pa.array(keep_rows, pa.int64()))
    output = output.set_column(output.schema.get_field_index("text"), "text", pa.array(texts, pa.large_string()))
    output = output.append_column("dup_cluster", pa.array(clusters, pa.string()))
    output = output.append_column("dup_cluster_size", pa.array(sizes, pa.int64()))
    shard_bytes = write_table(output, job.output_url, row_group_size=ROW_GROUP_SIZE)
    write_table(pa.Table.from_pylist([dict(zip(REMOVED_SCHEMA.names, values)) for values in removed],
                                     schema=REMOVED_SCHEMA), job.removed_url)
    write_table(pa.Table.from_pylist([dict(zip(CLUSTER_SCHEMA.names, values)) for values in members],
                                     schema=CLUSTER_SCHEMA), job.clusters_url)
    stats.documents_out = output.num_rows
    stats.seconds = time.perf_counter() - started
    return ShardResult((job.input_url,), job.output_url, shard_bytes, sha256_file(job.output_url), stats).to_dict()


def _repeated_keys(work: str, config: DedupConfig) -> frozenset[int]:
    return frozenset(np.concatenate([load_array(repeated_path(work, bucket))
                                     for bucket in range(config.buckets)]).tolist())


def _without_repeated(text: str, repeated: frozenset[int], config: ParagraphDedupConfig, stats: StageStats) -> str:
    if not repeated:
        return text
    kept = []
    for line, key in zip(text.split("\n"), normalize_lines(text, config.normalization)):
        if config.counts_line(key) and key64(key) in repeated:
            stats.notes["lines_removed"] += 1
            stats.notes["chars_removed"] += len(line)
        else:
            kept.append(line)
    return "\n".join(kept)
