"""Dedup step 1, per document shard: every key the later steps compare, written into the shuffles.

For document shard `part` it writes
- `keys/`      (doc, id, date, length, text_key, url_key), bucketed by text_key, for exact dedup and ranking
- `urls/`      the same rows bucketed by url_key, for URL dedup
- `bands/`     (band_key, doc) per LSH band, bucketed by band_key
- `paragraphs/` (paragraph_key, doc, text_key) once per distinct line of a document, bucketed by paragraph_key
- `windows/`   (window_key, doc, text_key, word) per window of `substring.min_words` words, bucketed by window_key
  (only when substring dedup is on)
- `signatures/<part>.npy` the MinHash signatures, read back to verify candidate pairs.
A document is named by `doc` = part number << 32 | row, which only these internal files use.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from configs.dedup import DedupConfig, ParagraphDedupConfig
from storage.document_shard import read_documents
from storage.arrays import save_array
from tasks.dedup.minhash import band_keys, shingle_hashes, signatures, token_hashes
from tasks.dedup.normalize import key64, normalize_lines, normalize_text, normalize_url
from tasks.dedup.shuffle import write_buckets
from tasks.dedup.windows import window_rows

KEY_SCHEMA = pa.schema([("doc", pa.int64()), ("id", pa.string()), ("date", pa.string()), ("length", pa.int64()),
                        ("text_key", pa.int64()), ("url_key", pa.int64())])
BAND_SCHEMA = pa.schema([("band_key", pa.int64()), ("doc", pa.int64())])
PARAGRAPH_SCHEMA = pa.schema([("paragraph_key", pa.int64()), ("doc", pa.int64()), ("text_key", pa.int64())])
DOC_BITS = 32


def doc_numbers(part: int, count: int) -> np.ndarray:
    return (np.int64(part) << np.int64(DOC_BITS)) + np.arange(count, dtype=np.int64)


def part_of(docs: np.ndarray) -> np.ndarray:
    return docs >> np.int64(DOC_BITS)


def row_of(docs: np.ndarray) -> np.ndarray:
    return docs & np.int64((1 << DOC_BITS) - 1)


def part_name(part: int) -> str:
    return f"{part:05d}"


def signatures_path(work: str, part: str) -> str:
    return f"{work}/signatures/{part}.npy"


def compute_features(shard_url: str, part: int, work: str, config: DedupConfig) -> dict:
    table = read_documents(shard_url, ["id", "url", "text", "lang", "source", "warc_date"])
    texts = table.column("text").to_pylist()
    scopes = table.column("source").to_pylist() if config.scope == "source" else [""] * len(texts)
    docs = doc_numbers(part, len(texts))
    name = part_name(part)

    text_keys = [key64(f"{scope}\0{normalize_text(text, config.exact.normalization)}")
                 for scope, text in zip(scopes, texts)]
    url_keys = [key64(f"{scope}\0{normalize_url(url)}") for scope, url in zip(scopes, table.column("url").to_pylist())]
    keys = pa.table({"doc": docs, "id": table.column("id"), "date": table.column("warc_date"),
                     "length": pa.array([len(text) for text in texts], pa.int64()),
                     "text_key": pa.array(text_keys, pa.int64()), "url_key": pa.array(url_keys, pa.int64())},
                    schema=KEY_SCHEMA)
    write_buckets(keys, "text_key", config.buckets, f"{work}/keys", name)
    write_buckets(keys, "url_key", config.buckets, f"{work}/urls", name)
    write_buckets(keys, "doc", config.buckets, f"{work}/docs", name)   # by document, for the clusters' decisions

    without_shingles = 0
    if config.minhash.enabled:
        bands, rows = config.minhash.lsh_shape()
        shingles = [shingle_hashes(token_hashes(text, lang or "", config.minhash),
                                   config.minhash.shingle_size(lang or ""))
                    for text, lang in zip(texts, table.column("lang").to_pylist())]
        matrix = signatures(shingles, bands * rows, config.minhash.seed)
        save_array(matrix, signatures_path(work, name))
        has_shingles = np.array([hashes.size > 0 for hashes in shingles], dtype=bool)
        without_shingles = int((~has_shingles).sum())
        scope_keys = {scope: key64(scope) if scope else 0 for scope in set(scopes)}   # one hash per scope
        salts = np.array([scope_keys[scope] for scope, keep in zip(scopes, has_shingles) if keep], dtype=np.int64)
        per_band = band_keys(matrix[has_shingles], bands, rows, salts)
        band_table = pa.table({"band_key": per_band.reshape(-1),
                               "doc": np.repeat(docs[has_shingles], bands)}, schema=BAND_SCHEMA)
        write_buckets(band_table, "band_key", config.buckets, f"{work}/bands", name)

    if config.paragraphs.enabled:
        write_buckets(_paragraph_rows(texts, docs, text_keys, config.paragraphs), "paragraph_key",
                      config.buckets, f"{work}/paragraphs", name)
    if config.substring.enabled:
        write_buckets(window_rows(texts, docs, text_keys, config.substring), "window_key", config.buckets,
                      f"{work}/windows", name)
    return {"part": part, "documents": len(texts), "without_shingles": without_shingles}


def _paragraph_rows(texts: list[str], docs: np.ndarray, text_keys: list[int],
                    config: ParagraphDedupConfig) -> pa.Table:
    paragraph_keys, owners, owner_texts = [], [], []
    for text, doc, text_key in zip(texts, docs.tolist(), text_keys):
        distinct = set(normalize_lines(text, config.normalization))
        for key in distinct:
            if config.counts_line(key):
                paragraph_keys.append(key64(key))
                owners.append(doc)
                owner_texts.append(text_key)
    return pa.table({"paragraph_key": pa.array(paragraph_keys, pa.int64()), "doc": pa.array(owners, pa.int64()),
                     "text_key": pa.array(owner_texts, pa.int64())}, schema=PARAGRAPH_SCHEMA)
