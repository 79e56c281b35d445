"""Scoring, per document shard: every attribute added as a column, and the shard's sketch of them saved beside it
(tasks/quality/summary.py); no document is dropped here."""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

import pyarrow as pa

from configs.quality import QualityConfig
from storage.document_shard import ROW_GROUP_SIZE, read_documents
from storage.manifest import sha256_file
from storage.parquet import write_table
from tasks.quality.attributes import ATTRIBUTE_TYPES, heuristic_attributes
from tasks.quality.classifier import QualityClassifier
from tasks.quality.models import QualityModels
from tasks.quality.perplexity import KenlmModelFiles, PerplexityScorer
from tasks.quality.summary import SKETCH_SUFFIX, shard_sketch
from tasks.shard_result import ShardResult
from tasks.stats import StageStats


@dataclass(frozen=True)
class ScoreJob:
    input_url: str
    output_url: str
    models_dir: str       # the quality_models stage's folder


def score_shard(job: ScoreJob, config: QualityConfig, bad_words_dir: str) -> dict:
    started = time.perf_counter()
    models = QualityModels.load(job.models_dir)
    table = read_documents(job.input_url)
    stats = StageStats(candidates=table.num_rows, documents_out=table.num_rows)
    columns: dict[str, list] = {name: [] for name in ATTRIBUTE_TYPES}
    for text, lang in zip(table.column("text").to_pylist(), table.column("lang").to_pylist()):
        stats.bytes_in += len(text.encode("utf-8", "surrogatepass"))
        if len(text) > config.max_chars:
            stats.notes["scored_on_first_max_chars"] += 1
            text = text[:config.max_chars]
        row = heuristic_attributes(text, lang, config.c4_lines, bad_words_dir)
        row["kenlm_ppl"] = _perplexity(text, lang, models, stats) if config.kenlm.enabled else None
        row["hq_prob"] = _classifier(models.classifier).hq_prob(text) if models.classifier else None
        for name in ATTRIBUTE_TYPES:
            columns[name].append(row[name])
    for name, kind in ATTRIBUTE_TYPES.items():
        table = table.append_column(name, pa.array(columns[name], kind))
    shard_bytes = write_table(table, job.output_url, row_group_size=ROW_GROUP_SIZE)
    shard_sketch(table).save(job.output_url + SKETCH_SUFFIX)    # for the filter's corpus-level cut points
    stats.bytes_out = stats.bytes_in
    stats.seconds = time.perf_counter() - started
    return ShardResult((job.input_url,), job.output_url, shard_bytes, sha256_file(job.output_url), stats).to_dict()


def _perplexity(text: str, lang: str | None, models: QualityModels, stats: StageStats) -> float | None:
    files = models.kenlm.get(lang or "")
    if files is None:
        stats.notes[f"no_perplexity_model_{lang}"] += 1    # counted, never a crash
        return None
    return _perplexity_scorer(files.sentencepiece, files.kenlm).perplexity(text)


# One model per worker process, loaded on first use (tasks on the same worker share it).
@lru_cache(maxsize=16)
def _perplexity_scorer(sentencepiece: str, kenlm: str) -> PerplexityScorer:
    return PerplexityScorer(KenlmModelFiles(sentencepiece, kenlm))


@lru_cache(maxsize=4)
def _classifier(path: str) -> QualityClassifier:
    return QualityClassifier(path)
