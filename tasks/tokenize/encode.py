"""Tokenize one document shard into one token shard: each document's ids followed by EOS."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import sentencepiece as spm

from configs.tokenizer import EOS_ID
from storage.document_shard import read_documents
from storage.token_shard import TokenShardWriter, token_shard_sha256
from tasks.shard_result import ShardResult
from tasks.stats import StageStats


@dataclass(frozen=True)
class TokenizeJob:
    input_url: str
    output_base: str      # the token shard is <output_base>.bin + <output_base>.idx
    model_path: str


def tokenize_shard(job: TokenizeJob) -> dict:
    started = time.perf_counter()
    processor = spm.SentencePieceProcessor(model_file=job.model_path)
    texts = read_documents(job.input_url, ["text"]).column("text").to_pylist()
    writer = TokenShardWriter(job.output_base, processor.get_piece_size())
    tokens = 0
    # One thread: Dask runs one worker process per core; SentencePiece's own threads would oversubscribe them.
    for ids in processor.encode(texts, num_threads=1):
        writer.add_document(ids + [EOS_ID])
        tokens += len(ids) + 1
    bin_path, idx_path = writer.close()
    stats = StageStats(candidates=len(texts), documents_out=len(texts),
                       bytes_in=sum(len(text.encode("utf-8", "surrogatepass")) for text in texts),
                       bytes_out=os.path.getsize(bin_path) + os.path.getsize(idx_path),
                       seconds=time.perf_counter() - started)
    stats.notes["tokens"] = tokens
    return ShardResult((job.input_url,), job.output_base, stats.bytes_out, token_shard_sha256(job.output_base),
                       stats).to_dict()

