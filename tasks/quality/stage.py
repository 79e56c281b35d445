"""Three stages, so each reruns only when what it depends on changes:

- `QualityModelsStage`: KenLM per reference language and the fastText classifier (negatives from raw extraction);
- `QualityScoresStage`: every attribute of every document (one call per shard), and their sketch for the filter's
  corpus-level cut points and charts (tasks/quality/summary.py);
- `QualityFilterStage`: thresholds applied to the stored attributes. Changing a threshold reruns only this stage;
  the other two are found in the store and reported cached.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property, partial

from configs.quality import QualityConfig
from configs.schema import Recipe
from storage.fs import file_fingerprint
from storage.locations import recipe_data_path
from storage.manifest import ShardEntry, sha256_file
from storage.stage_figures import QualityFilterFigures, QualityModelsFigures
from storage.stage_result import (StageResult, parent_of, stage_file, stage_folder, stage_shard_bytes,
                                  stage_shard_urls)
from tasks.fan_out import call
from tasks.grouping import byte_groups
from tasks.quality.apply import FilterJob, merge_examples
from tasks.quality.families import family_checks
from tasks.quality.funnel import funnel_rows
from tasks.quality.models import MODELS_FILE, write_models_index
from tasks.quality.reference import reference_files
from tasks.quality.report import filter_report, histograms_chart, models_report
from tasks.quality.score import ScoreJob
from tasks.quality.summary import SKETCH_FILE, SKETCH_SUFFIX, Sketch, summarize_attributes
from tasks.quality.task import filter_shards_task, score_shard_task, train_classifier_task, train_kenlm_task
from tasks.stage import StageContext, StageOutput, StageSpec, Steps, map_groups, shard_entry, summed_stats
from tasks.stats import StageStats

MIN_OUTPUT_SHARDS = 8    # the filter's output shards while there are scored shards enough: work for the next stages


def resolved_quality_config(recipe: Recipe) -> QualityConfig:
    """The recipe's quality config with `{data_dir}` expanded and local paths absolute (workers may run
    elsewhere)."""
    def paths(values: list[str]) -> list[str]:
        return [recipe_data_path(value, recipe.data_dir) for value in values]

    config = recipe.quality
    kenlm = config.kenlm.model_copy(update={"reference": {lang: paths(values)
                                                          for lang, values in config.kenlm.reference.items()}})
    classifier = config.classifier.model_copy(update={
        "positives": paths(config.classifier.positives),
        "evaluation_positives": paths(config.classifier.evaluation_positives),
        "evaluation_negatives": paths(config.classifier.evaluation_negatives)})
    return config.model_copy(update={"kenlm": kenlm, "classifier": classifier,
                                     "bad_words_dir": paths([config.bad_words_dir])[0]})


def _file_identities(paths: list[str]) -> list[dict]:
    return [file_fingerprint(path) for path in reference_files(paths)]


@dataclass(frozen=True)
class _QualityStage:
    recipe: Recipe

    @cached_property
    def config(self) -> QualityConfig:
        """The recipe's quality config, its paths resolved."""
        return resolved_quality_config(self.recipe)


@dataclass(frozen=True)
class QualityModelsStage(_QualityStage):
    raw_documents: StageResult

    @property
    def kenlm(self):
        return self.config.kenlm if self.config.kenlm.enabled else None

    @property
    def classifier(self):
        return self.config.classifier if self.config.classifier.enabled else None

    @cached_property
    def spec(self) -> StageSpec:
        kenlm, classifier = self.kenlm, self.classifier
        model_config = {"kenlm": kenlm.model_dump(mode="json") if kenlm else None,
                        "classifier": classifier.model_dump(mode="json") if classifier else None}
        reference_paths = [path for values in (kenlm.reference.values() if kenlm else []) for path in values]
        classifier_paths = (classifier.positives + classifier.evaluation_positives + classifier.evaluation_negatives
                            if classifier else [])
        heldout = sorted({part.heldout_ngrams for part in (kenlm, classifier) if part and part.heldout_ngrams})
        return StageSpec(name="quality_models", config=model_config,
                         parents=[parent_of(self.raw_documents)]
                         + _file_identities(reference_paths + classifier_paths + heldout),
                         code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        kenlm, classifier = self.kenlm, self.classifier
        models_dir = stage.stage_dir
        os.makedirs(models_dir, exist_ok=True)
        jobs = [partial(train_kenlm_task, lang, paths, models_dir, kenlm)
                for lang, paths in sorted(kenlm.reference.items())] if kenlm else []
        if classifier:
            jobs.append(partial(train_classifier_task, stage_shard_urls(self.raw_documents), models_dir, classifier,
                                {"positives": classifier.evaluation_positives,
                                 "negatives": classifier.evaluation_negatives}))
        trained = steps.map(call, jobs, "quality models")        # the language models and the classifier at once
        kenlm_results = trained[:len(kenlm.reference)] if kenlm else []
        classifier_result = trained[-1] if classifier else None
        write_models_index(models_dir, kenlm_results, classifier_result)
        files = [MODELS_FILE, *[path for row in kenlm_results for path in (row["sentencepiece"], row["kenlm"])],
                 *([classifier_result["model"], classifier_result["calibration_file"]] if classifier_result else [])]
        shards = [ShardEntry(path=name, bytes=os.path.getsize(os.path.join(models_dir, name)),
                             sha256=sha256_file(os.path.join(models_dir, name)), documents=0) for name in files]
        stats = StageStats(seconds=sum(row["seconds"] for row in kenlm_results)
                           + (classifier_result["seconds"] if classifier_result else 0.0))
        figures = QualityModelsFigures(
            kenlm_languages=[row["lang"] for row in kenlm_results],
            classifier={key: classifier_result[key] for key in ("heldout", "external")} if classifier_result else None)
        return StageOutput(shards=shards, stats=stats, figures=figures,
                           report=models_report(kenlm_results, classifier_result, stage.report_dir))


@dataclass(frozen=True)
class QualityScoresStage(_QualityStage):
    documents: StageResult
    models: StageResult

    @cached_property
    def spec(self) -> StageSpec:
        config = self.config
        scoring = {"c4_lines": config.c4_lines.model_dump(mode="json"), "max_chars": config.max_chars,
                   "kenlm": config.kenlm.enabled, "classifier": config.classifier.enabled}
        return StageSpec(name="quality_scores", config=scoring,
                         parents=[parent_of(self.documents), parent_of(self.models)]
                         + _file_identities([config.bad_words_dir]),
                         code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        models_dir = stage_folder(self.models)
        jobs = [ScoreJob(url, stage.path("shards", os.path.basename(url)), models_dir)
                for url in stage_shard_urls(self.documents)]
        steps.logger.info("quality scores: %d shards -> %s", len(jobs), stage.stage_dir)
        sketch = Sketch()       # the shards' sketches added up as their calls finish, for the filter's summary
        results = steps.map(score_shard_task, jobs, "quality scores", job_sizes=stage_shard_bytes(self.documents),
                            on_result=lambda result: sketch.add(Sketch.load(result["output"] + SKETCH_SUFFIX)),
                            config=self.config, bad_words_dir=self.config.bad_words_dir)
        sketch.save(stage.path(SKETCH_FILE))
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in results],
                           stats=summed_stats(results), task_results=results)


@dataclass(frozen=True)
class QualityFilterStage:
    recipe: Recipe
    scores: StageResult

    @cached_property
    def spec(self) -> StageSpec:
        config = self.recipe.quality
        return StageSpec(name="quality_filter",
                         config={"filter": config.filter.model_dump(mode="json"),
                                 "pii": config.pii.model_dump(mode="json"),
                                 "bucket_percentiles": list(config.kenlm.bucket_percentiles)},
                         parents=[parent_of(self.scores)], code_root=__name__)

    def produce(self, stage: StageContext, steps: Steps) -> StageOutput:
        config = self.recipe.quality
        thresholds = config.filter
        shard_urls = stage_shard_urls(self.scores)
        # the cut points from the scores' sketch, here (a pass fans out to the cluster only for a crowded bin)
        cutoffs = summarize_attributes(Sketch.load(stage_file(self.scores, SKETCH_FILE)), shard_urls, config)
        histograms = histograms_chart(thresholds, cutoffs)
        # runs of small shards -> one output shard each; the runs depend on the sizes alone, never on the workers
        sizes = stage_shard_bytes(self.scores)
        runs = byte_groups(list(zip(shard_urls, sizes)), sizes, MIN_OUTPUT_SHARDS, thresholds.output_shard_bytes)
        jobs = [_filter_job(stage, [url for url, _ in run]) for run in runs]
        results = map_groups(steps, filter_shards_task, jobs, [sum(size for _, size in run) for run in runs],
                             "quality filter", config=thresholds, cutoffs=cutoffs, pii=config.pii)
        stats = summed_stats(results)
        families = [family for family, _ in family_checks(thresholds, cutoffs)]
        funnel = funnel_rows(results, families)
        report = filter_report(cutoffs, funnel, dict(stats.drops),
                               merge_examples(results, thresholds.examples_per_reason), histograms(), stage.report_dir)
        task_rows = [{key: value for key, value in result.items() if key not in ("funnel", "examples")}
                     for result in results]
        return StageOutput(shards=[shard_entry(stage.stage_dir, result) for result in results], stats=stats,
                           task_results=task_rows, report=report,
                           figures=QualityFilterFigures(funnel=funnel,
                                                        kenlm_bucket_edges=cutoffs["kenlm_bucket_edges"],
                                                        classifier_min_hq_prob=cutoffs["classifier_min_hq_prob"]))


def _filter_job(stage: StageContext, input_urls: list[str]) -> FilterJob:
    """A run's output shard (and its list of removed documents) is named after its first scored shard."""
    name = os.path.basename(input_urls[0])
    return FilterJob(tuple(input_urls), stage.path("shards", name), stage.path("removed", name))
