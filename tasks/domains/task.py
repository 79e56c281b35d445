"""The domain stage's work, as calls a stage maps or makes: draw each shard's sample, fit the model once on the
whole sample, then give every document of each shard its topic and format. Each call records its result beside its
output (tasks.resumable), so a killed run resumes."""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from configs.domains import DomainsConfig
from storage.document_shard import ROW_GROUP_SIZE, read_documents
from storage.manifest import sha256_file
from storage.parquet import read_table, write_table
from tasks.domains.model import DomainModel, cards, fit_domains
from tasks.resumable import run_once, shard_record_url
from tasks.shard_result import ShardResult
from tasks.stats import StageStats

SAMPLE_SCHEMA = pa.schema([("draw", pa.uint64()), ("id", pa.string()), ("url", pa.string()),
                           ("text", pa.large_string())])


@dataclass(frozen=True)
class DomainJob:
    input_url: str
    sample_url: str
    output_url: str


def draw(seed: int, doc_id: str) -> int:
    """A document's place in the sample's order, from the seed and its id alone: where it sits does not matter."""
    return int.from_bytes(hashlib.blake2b(f"{seed}\0{doc_id}".encode(), digest_size=8).digest(), "big")


def sample_shard_task(job: DomainJob, share: float, seed: int) -> dict:
    """The shard's documents whose draw falls under `share` of the hash range."""
    def sample() -> dict:
        table = read_documents(job.input_url, ["id", "url", "text"])
        draws = np.array([draw(seed, doc_id) for doc_id in table.column("id").to_pylist()], np.uint64)
        chosen = np.arange(draws.size) if share >= 1 else np.flatnonzero(draws < np.uint64(int(share * 2 ** 64)))
        picked = table.take(pa.array(chosen, pa.int64()))
        write_table(pa.table([pa.array(draws[chosen], pa.uint64()), *picked.columns], schema=SAMPLE_SCHEMA),
                    job.sample_url)
        return {"sampled": int(chosen.size)}
    return run_once(shard_record_url(job.sample_url), sample)


def fit_call(sample_urls: list[str], model_url: str, config: DomainsConfig) -> dict:
    """The model fitted on every shard's sample in draw order (so on the same documents in the same order whatever
    the shards), saved at `model_url`; the cards of its clusters."""
    def fit() -> dict:
        started = time.perf_counter()
        table = pa.concat_tables([read_table(url) for url in sample_urls])
        table = table.take(pc.sort_indices(table, [("draw", "ascending"), ("id", "ascending")]))
        texts, rows = table.column("text").to_pylist(), table.select(["id", "url"]).to_pylist()
        fitted = fit_domains(texts, config)
        fitted.model.save(model_url)
        return {"sample_documents": len(texts), "cards": cards(fitted, texts, rows, config),
                "seconds": round(time.perf_counter() - started, 3)}
    return run_once(model_url + ".json", fit)


def assign_shard_task(job: DomainJob, model_url: str) -> dict:
    """The shard with `topic` and `format` columns; its documents and words per topic and per format."""
    def assign() -> dict:
        started = time.perf_counter()
        model = DomainModel.load(model_url)
        table = read_documents(job.input_url)
        texts = table.column("text").to_pylist()
        topics, formats = model.assign(texts)
        output = table.append_column("topic", pa.array(topics, pa.int32())).append_column(
            "format", pa.array(formats, pa.int32()))
        shard_bytes = write_table(output, job.output_url, row_group_size=ROW_GROUP_SIZE)
        words = np.array([len(text.split()) for text in texts], np.int64)
        text_bytes = sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
        stats = StageStats(candidates=table.num_rows, documents_out=table.num_rows, bytes_in=text_bytes,
                           bytes_out=text_bytes, seconds=time.perf_counter() - started)
        counts = {name: {"documents": np.bincount(labels, minlength=size).tolist(),
                         "words": np.bincount(labels, weights=words, minlength=size).astype(np.int64).tolist()}
                  for name, labels, size in (("topics", topics, len(model.topic_centroids)),
                                             ("formats", formats, len(model.format_centroids)))}
        return ShardResult((job.input_url,), job.output_url, shard_bytes, sha256_file(job.output_url),
                           stats).to_dict(domain_counts=counts)
    return run_once(shard_record_url(job.output_url), assign)

