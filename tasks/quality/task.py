"""The quality stages' work: model training and the summary are Prefect tasks; scoring and filtering are
per-shard calls, run as plain Dask tasks by the stage's steps (`flows.stage_runner.map_tasks`). Each records its
result beside its output so a rerun resumes."""
from __future__ import annotations

import os

from prefect import task

from configs.quality import ClassifierConfig, KenlmConfig, QualityConfig, QualityFilterConfig
from tasks.quality.apply import FilterJob, filter_shard
from tasks.quality.models import train_language_model, train_quality_classifier
from tasks.quality.score import ScoreJob, score_shard
from tasks.quality.summary import summarize_attributes
from tasks.resumable import run_once


@task(name="train-kenlm", retries=1, retry_delay_seconds=2, task_run_name="train-kenlm {lang}")
def train_kenlm_task(lang: str, paths: list[str], models_dir: str, config: KenlmConfig) -> dict:
    return run_once(os.path.join(models_dir, f"kenlm-{lang}.json"),
                    lambda: train_language_model(lang, paths, models_dir, config))


@task(name="train-quality-classifier", retries=1, retry_delay_seconds=2)
def train_classifier_task(negative_shards: list[str], models_dir: str, config: ClassifierConfig,
                          evaluation: dict[str, list[str]]) -> dict:
    return run_once(os.path.join(models_dir, "classifier.json"),
                    lambda: train_quality_classifier(negative_shards, models_dir, config, evaluation))


def score_shard_task(job: ScoreJob, config: QualityConfig, bad_words_dir: str) -> dict:
    return run_once(job.output_url + ".json", lambda: score_shard(job, config, bad_words_dir))


@task(name="quality-summarize", retries=1, retry_delay_seconds=2)
def summarize_task(shard_urls: list[str], config: QualityConfig) -> dict:
    return summarize_attributes(shard_urls, config)


def filter_shards_task(jobs: list[FilterJob], config: QualityFilterConfig, cutoffs: dict) -> list[dict]:
    return [run_once(job.output_url + ".json", lambda: filter_shard(job, config, cutoffs)) for job in jobs]
