"""Two stages after the document stages: `tokenizer` trains SentencePiece on a seeded sample of the last
document stage's output (one task), `tokenize` turns every document shard into a token shard with it (one task
per shard). The token shards' parents are both the documents and the tokenizer."""
from __future__ import annotations

import os
from functools import partial

from prefect import flow

from configs.schema import Recipe
from flows.reporting import StageReport
from flows.stage_runner import (StageContext, StageOutput, StageSpec, map_groups, map_tasks, run_stage, shard_entry,
                                summed_stats)
from storage.manifest import ShardEntry, sha256_file
from storage.stage_figures import TokenizerFigures
from storage.stage_result import StageResult, parent_of, stage_file, stage_shard_bytes, stage_shard_urls
from tasks.fan_out import call
from tasks.stats import StageStats
from tasks.tokenize.encode import TokenizeJob
from tasks.tokenize.task import tokenize_shards_task, train_tokenizer_task
from tasks.tokenize.train import MODEL_FILE, heldout_bytes_per_token


@flow(name="tokenizer", log_prints=True)
def tokenizer_stage_flow(recipe: Recipe, documents: StageResult) -> StageResult:
    config = recipe.tokenizer
    spec = StageSpec(name="tokenizer", config=config.model_dump(mode="json"), parents=[parent_of(documents)],
                     code_root=__name__)

    def produce(stage: StageContext) -> StageOutput:
        shard_urls = stage_shard_urls(documents)
        model_url = stage.path(MODEL_FILE)
        (result,) = map_tasks(call, [partial(train_tokenizer_task, shard_urls, model_url, config)], "train tokenizer")
        stats = StageStats(candidates=result["train_documents"], documents_out=result["train_documents"],
                           bytes_out=os.path.getsize(model_url), seconds=result["seconds"])
        figures = TokenizerFigures(vocab_size=result["vocab_size"], train_lines=result["train_lines"],
                                   heldout_documents=result["heldout_documents"],
                                   heldout_bytes_per_token=heldout_bytes_per_token(result["heldout"]))
        report = StageReport(markdown=_heldout_markdown(result), tables={"held-out": result["heldout"]},
                             files=[model_url])
        return StageOutput(shards=[ShardEntry(path=MODEL_FILE, bytes=stats.bytes_out, sha256=sha256_file(model_url),
                                              documents=result["train_documents"])],
                           stats=stats, report=report, figures=figures)

    return run_stage(recipe, spec, produce)


@flow(name="tokenize", log_prints=True)
def tokenize_stage_flow(recipe: Recipe, documents: StageResult, tokenizer: StageResult) -> StageResult:
    spec = StageSpec(name="tokenize", config={}, parents=[parent_of(documents), parent_of(tokenizer)],
                     code_root=__name__)

    def produce(stage: StageContext) -> StageOutput:
        model_path = stage_file(tokenizer, MODEL_FILE)
        jobs = [TokenizeJob(url, stage.path("shards", os.path.basename(url).removesuffix(".parquet")), model_path)
                for url in stage_shard_urls(documents)]
        results = map_groups(tokenize_shards_task, jobs, stage_shard_bytes(documents), "tokenize")
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in results],
                           stats=summed_stats(results), task_results=results)

    return run_stage(recipe, spec, produce)


def _heldout_markdown(result: dict) -> str:
    rows = [f"| {row['lang']} | {row['documents']} | {row['tokens']:,} | {row['fertility']} | "
            f"{row['bytes_per_token']} |" for row in result["heldout"]]
    return "\n".join([f"## Tokenizer: {result['vocab_size']} pieces, trained on {result['train_documents']} documents "
                      f"({result['train_lines']} lines)", "",
                      "Held-out documents (never trained on): fertility = tokens per whitespace word, bytes per "
                      "token = UTF-8 bytes / tokens (bits per byte = loss in nats per token / ln 2 / bytes per token).",
                      "", "| lang | documents | tokens | fertility | bytes per token |", "|---|---|---|---|---|",
                      *rows])
