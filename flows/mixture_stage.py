"""The mixture stage: train / validation token shards for a token budget from the token shards, with its data
card. Parents: the token shards and the documents they were made from (whose columns select sources)."""
from __future__ import annotations

import os
from dataclasses import fields
from functools import partial
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from configs.schema import Recipe
from flows.reporting import StageReport
from flows.stage_runner import StageContext, StageOutput, StageSpec, one_call, run_stage
from storage.manifest import Manifest, ShardEntry
from storage.stage_figures import MixtureFigures
from storage.stage_result import StageResult, parent_of, stage_shard_urls
from tracking.charts import png_bytes
from tasks.fan_out import in_background
from tasks.mixture.card import card_markdown, weights_png
from tasks.mixture.task import mix_call
from tasks.stats import StageStats

# No Prefect cache key: `planned` is a closure Prefect cannot hash, and a rerun resumes from the record anyway.
mix_task = task(name="mix", retries=1, retry_delay_seconds=2, cache_policy=NO_CACHE)(mix_call)


@flow(name="mixture", log_prints=True)
def mixture_stage_flow(recipe: Recipe, tokens: StageResult, documents: StageResult, vocab_size: int) -> StageResult:
    config = recipe.mixture
    spec = StageSpec(name="mixture", config=config.model_dump(mode="json") | {"vocab_size": vocab_size},
                     parents=[parent_of(tokens), parent_of(documents)],
                     code_root=__name__)

    def produce(stage: StageContext) -> StageOutput:
        # each token shard's manifest entry names the document shard it was made from
        token_shards = Manifest.load(tokens["manifest"]).shards
        pairs = list(zip(stage_shard_urls(tokens), [entry.source for entry in token_shards]))
        # the chart is drawn on a worker (whose matplotlib the run's earlier charts have loaded; ~1 s in the flow
        # process) while the last passes write the draws; from the recorded result when the mixture resumes. The
        # last one drawn counts: a retried mix task plans, and so draws, again.
        charts: list = []

        def draw_chart(sources: list[dict]):
            charts.append(in_background(partial(png_bytes, weights_png, sources)))

        result = one_call(mix_task, pairs, stage.stage_dir, vocab_size, config, planned=draw_chart)   # passes fan out
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

    return run_stage(recipe, spec, produce)
