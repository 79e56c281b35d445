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
from storage.stage_result import StageResult, parent_of, stage_shard_urls
from tasks.shard_result import ShardResult
from tasks.stage import StageContext, StageOutput, StageSpec, Steps, shard_entry, summed_stats
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
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in results],
                           stats=summed_stats(results))


def count_shard(job: tuple[int, str], stage_dir: str) -> dict:
    """A shard task's result (tasks/shard_result.py) for one document shard's counts file."""
    index, url = job
    texts = read_documents(url, columns=["text"]).column("text").to_pylist()
    data = json.dumps({"documents": len(texts), "characters": sum(map(len, texts))}).encode()
    output = os.path.join(stage_dir, f"counts-{index:03d}.json")
    os.makedirs(stage_dir, exist_ok=True)
    with open(output, "wb") as handle:
        handle.write(data)
    return ShardResult(inputs=(url,), output=output, output_bytes=len(data),
                       output_sha256=hashlib.sha256(data).hexdigest(),
                       stats=StageStats(candidates=len(texts), documents_out=len(texts))).to_dict()
