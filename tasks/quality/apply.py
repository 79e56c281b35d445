"""The filter step, per run of consecutive scored shards: apply the thresholds to the stored attributes (nothing
is rescored), keep the passing documents with their `kenlm_bucket` and their PII redacted (tasks/quality/pii.py)
in one output shard, and list every dropped one with its family and reason."""
from __future__ import annotations

import heapq
import time
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa

from configs.quality import PiiConfig, QualityFilterConfig
from storage.document_shard import ROW_GROUP_SIZE, read_documents
from storage.manifest import sha256_file
from storage.parquet import write_table
from tasks.quality.attributes import ATTRIBUTE_TYPES
from tasks.quality.classifier import seeded_rank
from tasks.quality.families import family_checks
from tasks.quality.pii import redact
from tasks.quality.rules import perplexity_bucket
from tasks.shard_result import ShardResult
from tasks.stats import StageStats

REMOVED_SCHEMA = pa.schema([("id", pa.string()), ("url", pa.string()), ("lang", pa.string()),
                            ("family", pa.string()), ("reason", pa.string())])
SNIPPET_CHARS = 600
KEPT = "kept"


@dataclass(frozen=True)
class FilterJob:
    input_urls: tuple[str, ...]     # consecutive scored shards, filtered into one output shard in this order
    output_url: str
    removed_url: str


def filter_shard(job: FilterJob, config: QualityFilterConfig, cutoffs: dict, pii: PiiConfig) -> dict:
    started = time.perf_counter()
    table = pa.concat_tables([read_documents(url) for url in job.input_urls], promote_options="default")
    checks = family_checks(config, cutoffs)
    edges = cutoffs.get("kenlm_bucket_edges", {})
    stats = StageStats(candidates=table.num_rows)
    funnel = {family: Counter() for family, _ in checks}
    keep_rows, buckets, removed = [], [], []
    examples: dict[str, list] = {}
    names = ["id", "url", "lang", "text", *ATTRIBUTE_TYPES]
    for index, row in enumerate(table.select(names).to_pylist()):
        text_bytes = _utf8_size(row["text"])
        stats.bytes_in += text_bytes
        family, reason = next(((family, reason) for family, check in checks if (reason := check(row))), (None, None))
        label = f"{family}/{reason}" if family else KEPT
        _remember_example(examples, label, row, config.examples_per_reason)
        if family:
            stats.drop(label, text_bytes)
            funnel[family].update(documents=1, tokens=row["word_tokens"])
            removed.append((row["id"], row["url"], row["lang"], family, reason))
            continue
        keep_rows.append(index)
        buckets.append(perplexity_bucket(row, edges))
        stats.bytes_out += text_bytes
    output = table.take(pa.array(keep_rows, pa.int64())).append_column("kenlm_bucket", pa.array(buckets, pa.string()))
    if pii.enabled:
        output = _redacted(output, pii, stats)
    shard_bytes = write_table(output, job.output_url, row_group_size=ROW_GROUP_SIZE)
    write_table(pa.Table.from_pylist([dict(zip(REMOVED_SCHEMA.names, values)) for values in removed],
                                     schema=REMOVED_SCHEMA), job.removed_url)
    stats.documents_out = output.num_rows
    stats.notes["tokens_in"] = sum(table.column("word_tokens").to_pylist())
    stats.notes["tokens_out"] = sum(output.column("word_tokens").to_pylist())
    stats.seconds = time.perf_counter() - started
    return ShardResult(job.input_urls, job.output_url, shard_bytes, sha256_file(job.output_url), stats).to_dict(
        funnel={family: dict(counts) for family, counts in funnel.items()}, examples=examples)


def _redacted(table: pa.Table, pii: PiiConfig, stats: StageStats) -> pa.Table:
    """The kept documents' texts with PII replaced; counts per type (`pii_email`, ...) and `pii_documents`, and
    `bytes_out` corrected for the texts that changed."""
    texts = []
    for text in table.column("text").to_pylist():
        redacted, counts = redact(text, pii)
        texts.append(redacted)
        if counts:
            stats.notes.update({f"pii_{kind}": count for kind, count in counts.items()})
            stats.notes["pii_documents"] += 1
            stats.bytes_out += _utf8_size(redacted) - _utf8_size(text)
    field = table.schema.field("text")
    return table.set_column(table.schema.get_field_index("text"), field, pa.array(texts, field.type))


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _remember_example(examples: dict[str, list], label: str, row: dict, limit: int) -> None:
    """Keep the `limit` documents per label with the smallest hash of their id: the same examples whatever the
    sharding, merged across shards by `merge_examples`."""
    if not limit:
        return
    entry = [seeded_rank(row["id"], 0), row["id"], row["url"], row["lang"], row["text"][:SNIPPET_CHARS]]
    chosen = examples.setdefault(label, [])
    if len(chosen) < limit:
        heapq.heappush(chosen, [-entry[0], *entry[1:]])
    elif -chosen[0][0] > entry[0]:
        heapq.heapreplace(chosen, [-entry[0], *entry[1:]])


def merge_examples(results: list[dict], limit: int) -> dict[str, list[dict]]:
    merged: dict[str, list] = {}
    for result in results:
        for label, entries in result["examples"].items():
            merged.setdefault(label, []).extend(entries)
    return {label: [{"id": doc_id, "url": url, "lang": lang, "text": text}
                    for _, doc_id, url, lang, text in sorted(entries, key=lambda e: -e[0])[:limit]]
            for label, entries in sorted(merged.items())}
