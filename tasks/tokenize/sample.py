"""A seeded choice of documents for tokenizer training and evaluation that depends on each document's id and
the seed alone, never on which shard it sits in or how many shards there are.

Each document gets a 64-bit hash of (seed, id). Its low 32 bits put it in the held-out set (a fraction of the
documents, never trained on); the training sample is the `sample_documents` others with the smallest hashes.
Shards are read one at a time, keeping only the best candidates so far: memory follows the sample size.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from storage.document_shard import read_documents
from tasks.dedup.normalize import key64


@dataclass
class Choice:
    """The chosen (hash, shard, row) triples, smallest hash first."""
    hashes: np.ndarray
    shards: np.ndarray
    rows: np.ndarray

    @classmethod
    def empty(cls) -> "Choice":
        return cls(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))

    def merged(self, other: "Choice", keep: int) -> "Choice":
        """Both choices' triples, the `keep` smallest by hash (ties by shard, then row)."""
        hashes, shards, rows = (np.concatenate(pair) for pair in
                                ((self.hashes, other.hashes), (self.shards, other.shards), (self.rows, other.rows)))
        order = np.lexsort((rows, shards, hashes))[:keep]
        return Choice(hashes[order], shards[order], rows[order])


def document_hashes(ids: list[str], seed: int) -> np.ndarray:
    return np.array([key64(f"{seed}\0{doc_id}") for doc_id in ids], dtype=np.int64)


def is_heldout(hashes: np.ndarray, fraction: float) -> np.ndarray:
    return (hashes & np.int64(0xFFFFFFFF)) < np.int64(int(fraction * 2**32))


def choose(shard_urls: list[str], seed: int, heldout_fraction: float, train: int,
           heldout: int) -> tuple[Choice, Choice]:
    """The training sample (up to `train` documents) and the held-out set (up to `heldout`)."""
    chosen_train, chosen_heldout = Choice.empty(), Choice.empty()
    for index, url in enumerate(shard_urls):
        hashes = document_hashes(read_documents(url, ["id"]).column("id").to_pylist(), seed)
        rows = np.arange(hashes.size, dtype=np.int64)
        shard = np.full(hashes.size, index, dtype=np.int64)
        mask = is_heldout(hashes, heldout_fraction)
        chosen_train = chosen_train.merged(Choice(hashes[~mask], shard[~mask], rows[~mask]), train)
        chosen_heldout = chosen_heldout.merged(Choice(hashes[mask], shard[mask], rows[mask]), heldout)
    return chosen_train, chosen_heldout


def chosen_documents(shard_urls: list[str], choice: Choice, columns: list[str]) -> list[dict]:
    """The chosen documents' columns, in the choice's order (smallest hash first)."""
    found: dict[tuple[int, int], dict] = {}
    for index in np.unique(choice.shards).tolist():
        rows = choice.rows[choice.shards == index]
        for row, values in zip(rows.tolist(), read_documents(shard_urls[index], columns).take(rows).to_pylist()):
            found[(index, row)] = values
    return [found[(shard, row)] for shard, row in zip(choice.shards.tolist(), choice.rows.tolist())]
