"""The mixture stage: train / validation token shards for a token budget from the token shards, with its data
card. Parents: the token shards and the documents they were made from (whose columns select sources)."""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from functools import cached_property, partial
from pathlib import Path

from configs.schema import Recipe
from storage.manifest import Manifest, ShardEntry
from storage.stage_figures import MixtureFigures, TokenizerFigures
from storage.stage_result import StageResult, parent_of
from tasks.fan_out import in_background
from tasks.mixture.card import card_markdown, weights_png
from tasks.mixture.census import token_document_pairs
from tasks.mixture.task import mix_call
from tasks.stage import StageContext, StageOutput, StageSpec, Steps
from tasks.stage_report import StageReport
from tasks.stats import StageStats
from tracking.charts import png_bytes


@dataclass(frozen=True)
class MixtureStage:
    recipe: Recipe
    tokens: StageResult
    documents: StageResult
    tokenizer: StageResult       # the tokens' tokenizer: its vocabulary size sizes the shards' ids

    @property
    def vocab_size(self) -> int:
        return TokenizerFigures.of(self.tokenizer).vocab_size

    @cached_property
    def spec(self) -> StageSpec:
        return StageSpec(name="mixture",
                         config=self.recipe.mixture.model_dump(mode="json") | {"vocab_size": self.vocab_size},
                         parents=[parent_of(self.tokens), parent_of(self.documents)], code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        token_shards = Manifest.load(self.tokens["manifest"]).shards
        pairs = token_document_pairs(self.tokens)
        # the chart is drawn on a worker (whose matplotlib the run's earlier charts have loaded; ~1 s in the flow
        # process) while the last passes write the draws; from the recorded result when the mixture resumes. The
        # last one drawn counts: a retried mix call plans, and so draws, again.
        charts: list = []

        def draw_chart(sources: list[dict]):
            charts.append(in_background(partial(png_bytes, weights_png, sources)))

        result = steps.call(mix_call, pairs, stage.stage_dir, self.vocab_size, self.recipe.mixture,
                            planned=draw_chart, label="mix")      # its passes fan out
        # candidates: every document the passes read, drawn or not (the work grows with them, not the budget)
        stats = StageStats(candidates=sum(entry.documents for entry in token_shards),
                           documents_out=result["train_pieces"] + result["validation_documents"],
                           seconds=result["seconds"],
                           bytes_out=sum(shard["bytes"] for shard in result["shards"]))
        if not charts:
            draw_chart(result["sources"])
        chart = os.path.join(stage.report_dir, "weights.png")
        Path(chart).write_bytes(charts[-1]())
        report = StageReport(markdown=card_markdown(result), tables={"mixture": result["sources"]}, files=[chart])
        shards = [ShardEntry(path=os.path.relpath(shard["path"], stage.stage_dir), bytes=shard["bytes"],
                             sha256=shard["sha256"], documents=shard["documents"]) for shard in result["shards"]]
        figures = MixtureFigures(**{field.name: result[field.name] for field in fields(MixtureFigures)})
        return StageOutput(shards=shards, stats=stats, report=report, figures=figures)
