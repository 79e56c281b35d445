"""The pipeline declared once (tasks/pipeline.py): a stage added with one entry runs in this process and as a Prefect
subflow on Dask to the same bytes, fed the documents of the stage before it."""
from __future__ import annotations

import json
from pathlib import Path

from tasks.pipeline import DOCUMENTS, EXTRACT, PipelineStage

TOY = PipelineStage("character_count", "dev.toy_stage:CharacterCountStage", {"documents": DOCUMENTS})


def test_a_stage_added_with_one_entry_runs_in_process_and_on_prefect_to_the_same_bytes(demo_recipe, tmp_path):
    from prefect import flow

    from flows.dask_cluster import dask_cluster
    from flows.stage_runner import stage_flow
    from storage.document_shard import read_documents
    from storage.stage_result import stage_shard_urls
    from tasks.pipeline import in_process, run_pipeline

    warcs = sorted(Path(demo_recipe.input.paths[0]).glob("*.warc.gz"))[:2]
    recipes = [demo_recipe.model_copy(update={"store": str(tmp_path / side), "input": demo_recipe.input.model_copy(
        update={"paths": [str(path) for path in warcs]})}) for side in ("in-process", "prefect")]

    @flow(name="toy-pipeline")
    def on_prefect(recipe):
        with dask_cluster(recipe.dask):
            return run_pipeline(recipe, stage_flow, (EXTRACT, TOY))

    alone = run_pipeline(recipes[0], in_process, (EXTRACT, TOY))
    on_dask = on_prefect(recipes[1])
    assert list(alone) == list(on_dask) == ["extract", "character_count"]
    assert [result["digest"] for result in alone.values()] == [result["digest"] for result in on_dask.values()]
    assert not any(result["cached"] for result in [*alone.values(), *on_dask.values()])
    counts = [json.loads(Path(url).read_text()) for url in stage_shard_urls(alone["character_count"])]
    texts = [read_documents(url, columns=["text"]).column("text").to_pylist()
             for url in stage_shard_urls(alone["extract"])]
    assert counts == [{"documents": len(shard), "characters": sum(map(len, shard))} for shard in texts]
    assert sum(count["documents"] for count in counts) == alone["extract"]["stats"]["documents_out"] > 0
