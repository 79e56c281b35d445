"""Repeated-paragraph reducer, one hash bucket of paragraph keys (CCNet-style).

A paragraph (a line of extracted text, compared up to case, digits and spacing) is counted once per distinct
document text among the documents that survive exact, URL and near-duplicate removal, so ten copies of one
page count once and never turn their own main text into "boilerplate". Keys seen in at least `min_documents`
distinct documents are written to `repeated/`, which the apply step removes from every document.
"""
from __future__ import annotations

import numpy as np

from configs.dedup import ParagraphDedupConfig
from storage.arrays import load_array, save_array
from tasks.dedup.clusters import removed_path
from tasks.dedup.features import PARAGRAPH_SCHEMA
from tasks.dedup.shuffle import read_bucket


def repeated_paragraphs(work: str, bucket: int, parts: list[str], buckets: int, config: ParagraphDedupConfig) -> dict:
    rows = read_bucket(f"{work}/paragraphs", bucket, parts, PARAGRAPH_SCHEMA)
    removed = np.concatenate([load_array(removed_path(work, label_bucket)) for label_bucket in range(buckets)])
    survivors = ~np.isin(rows.column("doc").to_numpy(), removed)
    pairs = np.stack([rows.column("paragraph_key").to_numpy()[survivors],
                      rows.column("text_key").to_numpy()[survivors]], axis=1)
    distinct = np.unique(pairs, axis=0) if pairs.size else pairs
    keys, documents = np.unique(distinct[:, 0], return_counts=True)
    repeated = keys[documents >= config.min_documents]
    save_array(repeated, repeated_path(work, bucket))
    return {"bucket": bucket, "paragraphs": int(keys.size), "repeated_paragraphs": int(repeated.size)}


def repeated_path(work: str, bucket: int) -> str:
    return f"{work}/repeated/b{bucket:05d}.npy"
