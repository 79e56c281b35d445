"""Three stages after the document stages: `TokenizerStage` trains SentencePiece on a seeded sample of the last
document stage's output (one call), `GivenTokenizerStage` publishes a given SentencePiece model the same way, and
`TokenizeStage` turns every document shard into a token shard with it (calls over groups of shards). The token
shards' parents are both the documents and the tokenizer."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property, partial

from configs.schema import Recipe
from storage.fs import file_fingerprint
from storage.manifest import ShardEntry, sha256_file
from storage.stage_figures import TokenizerFigures
from storage.stage_result import StageResult, parent_of, stage_file, stage_shard_bytes, stage_shard_urls
from tasks.fan_out import call
from tasks.stage import StageContext, StageOutput, StageSpec, Steps, map_groups, shard_entry, summed_stats
from tasks.stage_report import StageReport
from tasks.stats import StageStats
from tasks.tokenize.encode import TokenizeJob
from tasks.tokenize.task import tokenize_shards_task, train_tokenizer_task
from tasks.tokenize.train import MODEL_FILE, heldout_bytes_per_token


@dataclass(frozen=True)
class TokenizerStage:
    recipe: Recipe
    documents: StageResult

    @cached_property
    def spec(self) -> StageSpec:
        return StageSpec(name="tokenizer", config=self.recipe.tokenizer.model_dump(mode="json"),
                         parents=[parent_of(self.documents)], code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        model_url = stage.path(MODEL_FILE)
        (result,) = steps.map(call, [partial(train_tokenizer_task, stage_shard_urls(self.documents), model_url,
                                             self.recipe.tokenizer)], "train tokenizer")
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


@dataclass(frozen=True)
class GivenTokenizerStage:
    """A given SentencePiece model published as a tokenizer stage, so downstream stages read it the same way."""
    model_path: str

    @cached_property
    def spec(self) -> StageSpec:
        if not os.path.isfile(self.model_path):
            raise FileNotFoundError(f"tokenizer.path: {self.model_path} does not exist")
        return StageSpec(name="tokenizer", config={"path": "given"}, parents=[file_fingerprint(self.model_path)],
                         code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        import sentencepiece as spm

        os.makedirs(stage.stage_dir, exist_ok=True)
        with open(self.model_path, "rb") as source, open(stage.path(MODEL_FILE), "wb") as target:
            target.write(source.read())
        vocab_size = spm.SentencePieceProcessor(model_file=stage.path(MODEL_FILE)).get_piece_size()
        stats = StageStats(bytes_out=os.path.getsize(stage.path(MODEL_FILE)))
        return StageOutput(shards=[ShardEntry(path=MODEL_FILE, bytes=stats.bytes_out,
                                              sha256=sha256_file(stage.path(MODEL_FILE)), documents=0)], stats=stats,
                           figures=TokenizerFigures(vocab_size=vocab_size))


@dataclass(frozen=True)
class TokenizeStage:
    documents: StageResult
    tokenizer: StageResult

    @cached_property
    def spec(self) -> StageSpec:
        return StageSpec(name="tokenize", config={}, parents=[parent_of(self.documents), parent_of(self.tokenizer)],
                         code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        model_path = stage_file(self.tokenizer, MODEL_FILE)
        jobs = [TokenizeJob(url, stage.path("shards", os.path.basename(url).removesuffix(".parquet")), model_path)
                for url in stage_shard_urls(self.documents)]
        results = map_groups(steps, tokenize_shards_task, jobs, stage_shard_bytes(self.documents), "tokenize")
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in results],
                           stats=summed_stats(results), task_results=results)


def _heldout_markdown(result: dict) -> str:
    rows = [f"| {row['lang']} | {row['documents']} | {row['tokens']:,} | {row['fertility']} | "
            f"{row['bytes_per_token']} |" for row in result["heldout"]]
    return "\n".join([f"## Tokenizer: {result['vocab_size']} pieces, trained on {result['train_documents']} documents "
                      f"({result['train_lines']} lines)", "",
                      "Held-out documents (never trained on): fertility = tokens per whitespace word, bytes per "
                      "token = UTF-8 bytes / tokens (bits per byte = loss in nats per token / ln 2 / bytes per token).",
                      "", "| lang | documents | tokens | fertility | bytes per token |", "|---|---|---|---|---|",
                      *rows])
