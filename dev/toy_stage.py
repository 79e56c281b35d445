"""A toy stage for tests/test_pipeline.py, made the way a new stage is (tasks/pipeline.py): a dataclass with `spec`
and `produce` beside its work, added to a pipeline with one entry. Per document shard: how many documents and
characters it holds."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cached_property

from storage.document_shard import read_documents
from storage.manifest import ShardEntry
from storage.stage_result import StageResult, parent_of, stage_shard_urls
from tasks.stage import StageContext, StageOutput, StageSpec, Steps
from tasks.stats import StageStats


@dataclass(frozen=True)
class CharacterCountStage:
    documents: StageResult

    @cached_property
    def spec(self) -> StageSpec:
        return StageSpec(name="character_count", config={}, parents=[parent_of(self.documents)],
                         code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        jobs = list(enumerate(stage_shard_urls(self.documents)))
        results = steps.map(count_shard, jobs, "character count", stage_dir=stage.stage_dir)
        shards = [ShardEntry(path=result["path"], bytes=result["bytes"], sha256=result["sha256"],
                             documents=result["documents"], sources=[result["source"]]) for result in results]
        documents = sum(shard.documents for shard in shards)
        return StageOutput(shards=shards, stats=StageStats(candidates=documents, documents_out=documents))


def count_shard(job: tuple[int, str], stage_dir: str) -> dict:
    index, url = job
    texts = read_documents(url, columns=["text"]).column("text").to_pylist()
    data = json.dumps({"documents": len(texts), "characters": sum(map(len, texts))}).encode()
    path = f"counts-{index:03d}.json"
    os.makedirs(stage_dir, exist_ok=True)
    with open(os.path.join(stage_dir, path), "wb") as handle:
        handle.write(data)
    return {"path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "documents": len(texts),
            "source": url}
