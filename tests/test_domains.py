"""The domain stage (tasks/domains) through the stage contract: documents of three real sources (State of the Union
addresses, Shakespeare's plays, Moby-Dick) get one topic per source and a format; a document's domain does not
depend on its shard or on the input's order, and the cards describe what they count."""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from functools import cached_property

import pytest

from configs.schema import parse_recipe
from storage.document_shard import DOCUMENT_SCHEMA, read_documents, write_documents
from storage.manifest import ShardEntry, sha256_file
from tasks.domains.model import DomainModel
from tasks.domains.stage import MODEL_FILE, DomainStage
from tasks.stage import StageContext, StageOutput, StageSpec, Steps
from tasks.stage_report import StageReport
from tasks.stage_run import run_in_process
from tasks.stats import StageStats

PER_SOURCE = 24


@pytest.fixture(scope="module")
def documents(data_dir) -> list[dict]:
    reference = data_dir / "reference"
    speeches = [path.read_text(errors="replace")[:5000]
                for path in sorted((reference / "speeches_nltk" / "state_union").glob("*.txt"))[:PER_SOURCE]]
    plays = (reference / "tinyshakespeare" / "input.txt").read_text()
    novel = (reference / "gutenberg_nltk" / "melville-moby_dick.txt").read_text()
    sources = {"speech": speeches, "play": [plays[index * 3000:(index + 1) * 3000] for index in range(PER_SOURCE)],
               "novel": [novel[20_000 + index * 3000:20_000 + (index + 1) * 3000] for index in range(PER_SOURCE)]}
    return [{"id": f"{source}-{index}", "url": f"https://example.org/{source}/{index}", "text": text, "lang": "en",
             "lang_score": 1.0, "source": source, "warc_path": "", "warc_record_id": "", "warc_offset": 0,
             "warc_date": "", "charset": "utf-8"}
            for source, texts in sources.items() for index, text in enumerate(texts)]


@dataclass(frozen=True)
class GivenDocuments:
    """A document stage whose output is the given shards (each a list of documents)."""
    shards: tuple[tuple[dict, ...], ...]

    @cached_property
    def spec(self) -> StageSpec:
        return StageSpec(name="given", config={"ids": [[doc["id"] for doc in shard] for shard in self.shards]},
                         parents=[], code_root="storage.document_shard")     # what writes its output

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        entries = []
        for index, shard in enumerate(self.shards):
            path = stage.path("shards", f"part-{index:05d}.parquet")
            write_documents({name: [doc[name] for doc in shard] for name in DOCUMENT_SCHEMA.names}, path)
            entries.append(ShardEntry(path=os.path.relpath(path, stage.stage_dir), bytes=os.path.getsize(path),
                                      sha256=sha256_file(path), documents=len(shard)))
        count = sum(map(len, self.shards))
        return StageOutput(shards=entries, stats=StageStats(candidates=count, documents_out=count))


def domains_of(shards: list[list[dict]], store: str, sample: int = 50) -> tuple[dict[str, tuple[int, int]], dict]:
    recipe = parse_recipe({"name": "domains-test", "store": store, "input": {"paths": ["unused"]},
                           "domains": {"enabled": True, "topics": 3, "formats": 3, "components": 16,
                                       "sample_documents": sample}})
    parent = run_in_process(GivenDocuments(tuple(tuple(shard) for shard in shards)), store)
    result = run_in_process(DomainStage(recipe, parent), store)
    stage_dir = os.path.dirname(result["manifest"])
    rows = [row for name in sorted(os.listdir(f"{stage_dir}/shards")) if name.endswith(".parquet")
            for row in read_documents(f"{stage_dir}/shards/{name}", ["id", "topic", "format"]).to_pylist()]
    return {row["id"]: (row["topic"], row["format"]) for row in rows}, result


def test_each_source_is_one_topic_and_a_documents_domain_ignores_its_shard_and_the_order(documents, tmp_path):
    copy = dict(documents[5], id="speech-5-copy")         # the same text under another id, in another shard
    domains, result = domains_of([documents[:30], documents[30:50], documents[50:] + [copy]], str(tmp_path / "a"))
    assert len(domains) == len(documents) + 1 == result["stats"]["documents_out"]
    for source in ("speech", "play", "novel"):
        topics = [domains[doc["id"]][0] for doc in documents if doc["source"] == source]
        assert len(set(topics)) == 1, (source, topics)          # one topic per source ...
    assert len({domains[f"{source}-0"][0] for source in ("speech", "play", "novel")}) == 3   # ... each its own
    assert len({domains[doc["id"]][1] for doc in documents}) == 3
    assert domains["speech-5-copy"] == domains["speech-5"]

    shuffled = [*documents, copy]
    random.Random(1).shuffle(shuffled)
    again, moved = domains_of([shuffled[:40], shuffled[40:]], str(tmp_path / "b"))
    assert again == domains                                   # the same clusters, numbered the same
    models = [DomainModel.load(f"{os.path.dirname(run['manifest'])}/{MODEL_FILE}") for run in (result, moved)]
    assert all((getattr(models[0], name) == getattr(models[1], name)).all() for name in vars(models[0]))  # bitwise


def test_the_cards_count_the_output_and_show_the_clusters(documents, tmp_path):
    domains, result = domains_of([documents[:36], documents[36:]], str(tmp_path), sample=1000)   # all of them
    # every shard's sample is the whole shard: its features were read from the sample, to what computing them gives
    model = DomainModel.load(f"{os.path.dirname(result['manifest'])}/{MODEL_FILE}")
    assigned = zip(documents, *model.assign([doc["text"] for doc in documents]))
    assert {doc["id"]: (int(topic), int(format_)) for doc, topic, format_ in assigned} == domains
    report = StageReport.load(StageReport.folder_of(os.path.dirname(result["manifest"])))
    for kind, key in (("topics", "topic"), ("formats", "format")):
        rows = report.tables[kind]
        assert [row[key] for row in rows] == [0, 1, 2]
        assert [row["documents"] for row in rows] == [sum(1 for pair in domains.values() if pair[key == "format"]
                                                           == row[key]) for row in rows]
        assert sum(row["words"] for row in rows) == sum(len(doc["text"].split()) for doc in documents)
        assert sum(row["sample_documents"] for row in rows) == len(documents)      # the sample: every document
    speech_topic = domains["speech-0"][0]
    terms = report.tables["topics"][speech_topic]["top_terms"].split(", ")
    assert len(terms) == 10 and {"government", "congress", "nation", "states", "people"} & set(terms), terms
    assert f"### topic {speech_topic}" in report.markdown and report.markdown.count("- https://example.org/") == 18
