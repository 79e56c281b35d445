"""The peer for tokenization: datatrove 0.10.1's DocumentTokenizer over our Parquet document shards, with a
`tokenizers` byte-level BPE of the same vocabulary size trained on the same sample lines as ours.

Run it with the peer venv (`bash benchmarks/setup_peer.sh`):

    benchmarks/_work/venv-peer/bin/python benchmarks/peer_tokenize_datatrove.py SHARD_DIR --sample LINES.txt \
        --vocab 32000 --work DIR --workers N

Prints one JSON line: seconds (tokenizer training, tokenization executor run), tokens (read back from the
files DocumentTokenizer wrote: bytes / 2 of its .ds files for a uint16 vocabulary), documents_in, workers.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from datatrove.executor.local import LocalPipelineExecutor
from datatrove.pipeline.readers import ParquetReader
from datatrove.pipeline.tokens import DocumentTokenizer
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers


def train_bpe(sample: Path, vocab: int, out: Path) -> float:
    started = time.perf_counter()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train([str(sample)], trainer)
    tokenizer.save(str(out))
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("shards", type=Path)
    parser.add_argument("--sample", type=Path, required=True)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    files = sorted(args.shards.glob("*.parquet"))
    tokenizer_path = args.work / "tokenizer.json"
    train_seconds = train_bpe(args.sample, args.vocab, tokenizer_path)
    started = time.perf_counter()
    LocalPipelineExecutor(
        pipeline=[ParquetReader(str(args.shards), glob_pattern="*.parquet", text_key="text", id_key="id"),
                  DocumentTokenizer(str(args.work / "tokens"), tokenizer_name_or_path=str(tokenizer_path),
                                    eos_token="<|endoftext|>", shuffle_documents=False)],
        tasks=len(files), workers=min(args.workers, len(files)), logging_dir=str(args.work / "logs"),
    ).run()
    seconds = time.perf_counter() - started
    tokens = sum(path.stat().st_size for path in (args.work / "tokens").rglob("*.ds")) // 2
    documents = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    print(json.dumps({"seconds": {"train_tokenizer": round(train_seconds, 3), "tokenize": round(seconds, 3)},
                      "tokens": tokens, "documents_in": documents, "workers": args.workers}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
