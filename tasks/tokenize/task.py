"""The tokenizer stages' work: training (one call) and tokenization (one call per group of document shards), run
as plain Dask tasks by the stages' steps, each recording its result beside its output so a rerun resumes."""
from __future__ import annotations

from configs.tokenizer import TokenizerConfig
from tasks.resumable import run_once, shard_record_url
from tasks.tokenize.encode import TokenizeJob, tokenize_shard
from tasks.tokenize.train import train_tokenizer


def train_tokenizer_task(shard_urls: list[str], model_url: str, config: TokenizerConfig) -> dict:
    return run_once(model_url + ".json", lambda: train_tokenizer(shard_urls, model_url, config))


def tokenize_shards_task(jobs: list[TokenizeJob]) -> list[dict]:
    return [run_once(shard_record_url(job.output_base), lambda: tokenize_shard(job)) for job in jobs]
