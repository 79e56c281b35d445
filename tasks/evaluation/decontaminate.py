"""Decontamination, per document shard: a document that shares any word n-gram with the evaluation suite is
removed (reason `eval_contamination`) and listed with how many n-grams it shares. A document's fate depends on
its text and the suite alone."""
from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa

from storage.document_shard import ROW_GROUP_SIZE, read_documents
from storage.manifest import sha256_file
from storage.parquet import write_table
from tasks.evaluation.ngrams import NgramSet
from tasks.shard_result import ShardResult
from tasks.stats import StageStats

REASON = "eval_contamination"
REMOVED_SCHEMA = pa.schema([("id", pa.string()), ("url", pa.string()), ("reason", pa.string()),
                            ("shared_ngrams", pa.int64())])


@dataclass(frozen=True)
class DecontaminateJob:
    input_url: str
    output_url: str
    removed_url: str
    ngrams_path: str


def decontaminate_shard(job: DecontaminateJob) -> dict:
    started = time.perf_counter()
    suite = NgramSet.load(job.ngrams_path)
    table = read_documents(job.input_url)
    stats = StageStats(candidates=table.num_rows)
    keep, removed = [], []
    for index, (doc_id, url, text) in enumerate(zip(*(table.column(name).to_pylist() for name in ("id", "url", "text")))):
        size = len(text.encode("utf-8", "surrogatepass"))
        stats.bytes_in += size
        shared = suite.shared(text)
        if shared:
            stats.drop(REASON, size)
            removed.append({"id": doc_id, "url": url, "reason": REASON, "shared_ngrams": shared})
        else:
            keep.append(index)
            stats.bytes_out += size
    output = table.take(pa.array(keep, pa.int64()))
    shard_bytes = write_table(output, job.output_url, row_group_size=ROW_GROUP_SIZE)
    write_table(pa.Table.from_pylist(removed, schema=REMOVED_SCHEMA), job.removed_url)
    stats.documents_out = output.num_rows
    stats.seconds = time.perf_counter() - started
    return ShardResult((job.input_url,), job.output_url, shard_bytes, sha256_file(job.output_url), stats).to_dict()
