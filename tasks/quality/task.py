"""The quality stages' work: model training, scoring and filtering are calls run as plain Dask tasks by the
stage's steps (`Steps.map`, tasks/stage.py), each recording its result beside its output so a rerun resumes;
the filter's corpus-level summary (tasks/quality/summary.py) is computed in the flow process from the scores stage's
attribute sketch."""
from __future__ import annotations

import os

from configs.quality import ClassifierConfig, KenlmConfig, PiiConfig, QualityConfig, QualityFilterConfig
from tasks.quality.apply import FilterJob, filter_shard
from tasks.quality.models import train_language_model, train_quality_classifier
from tasks.quality.score import ScoreJob, score_shard
from tasks.resumable import run_once


def train_kenlm_task(lang: str, paths: list[str], models_dir: str, config: KenlmConfig) -> dict:
    return run_once(os.path.join(models_dir, f"kenlm-{lang}.json"),
                    lambda: train_language_model(lang, paths, models_dir, config))


def train_classifier_task(negative_shards: list[str], models_dir: str, config: ClassifierConfig,
                          evaluation: dict[str, list[str]]) -> dict:
    return run_once(os.path.join(models_dir, "classifier.json"),
                    lambda: train_quality_classifier(negative_shards, models_dir, config, evaluation))


def score_shard_task(job: ScoreJob, config: QualityConfig, bad_words_dir: str) -> dict:
    return run_once(job.output_url + ".json", lambda: score_shard(job, config, bad_words_dir))


def filter_shards_task(jobs: list[FilterJob], config: QualityFilterConfig, cutoffs: dict, pii: PiiConfig) -> list[dict]:
    return [run_once(job.output_url + ".json", lambda: filter_shard(job, config, cutoffs, pii)) for job in jobs]
