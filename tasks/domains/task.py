"""The domain stage's work, as calls a stage maps or makes: draw each shard's sample with its features, fit the model
once on the whole sample, then give every document of each shard its topic and format. Each call records its result
beside its output (tasks.resumable), so a killed run resumes.

scikit-learn (~2 s to import) is imported in the calls, on the workers (which preload it: flows/dask_cluster.
LIBRARY_PRELOAD): the flow process only names them."""
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
from tasks.resumable import run_once, shard_record_url
from tasks.shard_result import ShardResult
from tasks.stats import StageStats

# a sampled document, with what the fit reads of it: its hashed word counts (a sparse row) and its format vector
SAMPLE_SCHEMA = pa.schema([("draw", pa.uint64()), ("id", pa.string()), ("url", pa.string()),
                           ("text", pa.large_string()), ("count_indices", pa.list_(pa.int32())),
                           ("count_values", pa.list_(pa.float32())), ("format", pa.list_(pa.float64()))])


@dataclass(frozen=True)
class DomainJob:
    input_url: str
    sample_url: str
    output_url: str


def draw(seed: int, doc_id: str) -> int:
    """A document's place in the sample's order, from the seed and its id alone: where it sits does not matter."""
    return int.from_bytes(hashlib.blake2b(f"{seed}\0{doc_id}".encode(), digest_size=8).digest(), "big")


def sample_shard_task(job: DomainJob, share: float, seed: int, hash_features: int) -> dict:
    """The shard's documents whose draw falls under `share` of the hash range, with their features; the sample's
    vocabulary beside it (`words_url`)."""
    from tasks.domains.features import sample_features

    def sample() -> dict:
        table = read_documents(job.input_url, ["id", "url", "text"])
        draws = np.array([draw(seed, doc_id) for doc_id in table.column("id").to_pylist()], np.uint64)
        chosen = np.arange(draws.size) if share >= 1 else np.flatnonzero(draws < np.uint64(int(share * 2 ** 64)))
        picked = table.take(pa.array(chosen, pa.int64()))
        counts, formats, vocabulary = sample_features(picked.column("text").to_pylist(), hash_features)
        write_table(pa.table([pa.array(draws[chosen], pa.uint64()), *picked.columns,
                              _lists(counts.indices.astype(np.int32), counts.indptr),
                              _lists(counts.data, counts.indptr),
                              _lists(formats.ravel(), np.arange(len(formats) + 1) * formats.shape[1])],
                             schema=SAMPLE_SCHEMA), job.sample_url)
        counted = list(vocabulary.values())
        write_table(pa.table({"word": list(vocabulary), "count": pa.array([count for count, _ in counted], pa.int64()),
                              "feature": pa.array([feature for _, feature in counted], pa.int32())}),
                    words_url(job.sample_url))
        return {"sampled": int(chosen.size)}
    return run_once(shard_record_url(job.sample_url), sample)


def words_url(sample_url: str) -> str:
    return sample_url.removesuffix(".parquet") + ".words.parquet"


def _lists(values: np.ndarray, offsets: np.ndarray) -> pa.ListArray:
    """`values` cut into lists at `offsets` (list i is values[offsets[i]:offsets[i + 1]], as a CSR row)."""
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32), pa.int32()), pa.array(values))


def fit_call(sample_urls: list[str], model_url: str, config: DomainsConfig) -> dict:
    """The model fitted on every shard's sample in draw order (so on the same documents in the same order whatever
    the shards), saved at `model_url`; the cards of its clusters."""
    from tasks.domains.model import cards, fit_domains

    def fit() -> dict:
        started = time.perf_counter()
        table = pa.concat_tables([read_table(url) for url in sample_urls])
        table = table.take(pc.sort_indices(table, [("draw", "ascending"), ("id", "ascending")])).combine_chunks()
        counts, formats = _features(table, config.hash_features)
        vocabulary: dict[str, tuple[int, int]] = {}
        for words in (read_table(words_url(url)) for url in sample_urls):
            for word, count, feature in zip(*(words.column(name).to_pylist() for name in ("word", "count", "feature"))):
                vocabulary[word] = (vocabulary.get(word, (0, 0))[0] + count, feature)
        texts, rows = table.column("text").to_pylist(), table.select(["id", "url"]).to_pylist()
        fitted = fit_domains(counts, formats, config)
        fitted.model.save(model_url)
        return {"sample_documents": len(texts), "cards": cards(fitted, texts, rows, vocabulary),
                "seconds": round(time.perf_counter() - started, 3)}
    return run_once(model_url + ".json", fit)


def _features(sample: pa.Table, hash_features: int) -> tuple:
    """The hashed word counts (a CSR matrix) and format vectors of a sample table's rows (SAMPLE_SCHEMA)."""
    from scipy import sparse

    from tasks.domains.features import FORMAT_FEATURES

    indices, values, formats = (sample.column(name).combine_chunks() for name in ("count_indices", "count_values",
                                                                                  "format"))
    counts = sparse.csr_matrix((values.flatten().to_numpy(), indices.flatten().to_numpy(),
                                indices.offsets.to_numpy() - indices.offsets[0].as_py()),
                               shape=(sample.num_rows, hash_features))
    return counts, formats.flatten().to_numpy().reshape(sample.num_rows, len(FORMAT_FEATURES))


def assign_shard_task(job: DomainJob, model_url: str) -> dict:
    """The shard with `topic` and `format` columns; its documents and words per topic and per format. When the
    shard's sample is the whole shard (a corpus no larger than the sample asked for), its features are read from
    the sample, in the shard's order, not computed again (~0.3 ms a document)."""
    from tasks.domains.model import DomainModel

    def assign() -> dict:
        started = time.perf_counter()
        model = DomainModel.load(model_url)
        table = read_documents(job.input_url)
        texts = table.column("text").to_pylist()
        sample = read_table(job.sample_url, columns=["count_indices", "count_values", "format"])
        topics, formats = (model.assign_features(*_features(sample, model.idf.size))
                           if sample.num_rows == table.num_rows else model.assign(texts))
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

