"""The pipeline, declared once: the stages in the order they run, what each takes from the results before it, and
which recipe sections switch it on.

`run_pipeline(recipe, run)` builds every stage the recipe enables from the results before it and hands it to `run`:
`flows.stage_runner.stage_flow` (a Prefect subflow of Dask calls: `sluice run`, the ablation's and the mixture
search's data) or `in_process` (this process, no Prefect, no Dask). The two give the same bytes.

A new stage is its config (a recipe section), its `tasks/<x>/` package (a dataclass with `spec` and `produce`, see
tasks/stage.py) and one `PipelineStage` entry here. A stage class is named as "module:Class" and imported when the
stage is built: a run reaches its first task without importing the later stages (about 1.5 s of modules), and a
recipe that switches one off never imports it.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Callable

from configs.schema import Recipe
from storage.stage_result import StageResult
from tasks.stage import Stage

DOCUMENTS = "documents"     # the result of the last stage so far that makes documents

Runner = Callable[[Recipe, Stage], StageResult]


@dataclass(frozen=True)
class PipelineStage:
    name: str
    stage: str                                   # "module:Class", a dataclass whose fields are `recipe` and inputs
    inputs: dict[str, str] = field(default_factory=dict)   # field -> a result: a stage's name, DOCUMENTS or a given
    sections: tuple[str, ...] = ()               # recipe sections that must all be enabled (none: always runs)
    makes_documents: bool = False                # its output is the documents the stages after it read

    def enabled(self, recipe: Recipe) -> bool:
        return all(getattr(recipe, section).enabled for section in self.sections)

    def build(self, recipe: Recipe, results: dict[str, StageResult]) -> Stage:
        module, class_name = self.stage.split(":")
        stage_class = getattr(importlib.import_module(module), class_name)
        arguments = {member: results[source] for member, source in self.inputs.items()}
        if "recipe" in {member.name for member in dataclasses.fields(stage_class)}:
            arguments["recipe"] = recipe
        return stage_class(**arguments)


EXTRACT = PipelineStage("extract", "tasks.extract.stage:ExtractStage", makes_documents=True)
DEDUP = PipelineStage("dedup", "tasks.dedup.stage:DedupStage", {"parent": "extract"}, ("dedup",),
                      makes_documents=True)
QUALITY_MODELS = PipelineStage("quality_models", "tasks.quality.stage:QualityModelsStage",
                               {"raw_documents": "extract"}, ("quality",))
QUALITY_SCORES = PipelineStage("quality_scores", "tasks.quality.stage:QualityScoresStage",
                               {"documents": DOCUMENTS, "models": "quality_models"}, ("quality",))
QUALITY_FILTER = PipelineStage("quality_filter", "tasks.quality.stage:QualityFilterStage",
                               {"scores": "quality_scores"}, ("quality",), makes_documents=True)
DOMAINS = PipelineStage("domains", "tasks.domains.stage:DomainStage", {"parent": DOCUMENTS}, ("domains",),
                        makes_documents=True)
TOKENIZER = PipelineStage("tokenizer", "tasks.tokenize.stage:TokenizerStage", {"documents": DOCUMENTS},
                          ("tokenizer",))
TOKENIZE = PipelineStage("tokenize", "tasks.tokenize.stage:TokenizeStage",
                         {"documents": DOCUMENTS, "tokenizer": "tokenizer"}, ("tokenizer",))
MIXTURE = PipelineStage("mixture", "tasks.mixture.stage:MixtureStage",
                        {"tokens": "tokenize", "documents": DOCUMENTS, "tokenizer": "tokenizer"},
                        ("tokenizer", "mixture"))
DECONTAMINATE = PipelineStage("decontaminate", "tasks.evaluation.stage:DecontaminateStage",
                              {"documents": DOCUMENTS, "suite": "suite"}, makes_documents=True)

DOCUMENT_STAGES = (EXTRACT, DEDUP, QUALITY_MODELS, QUALITY_SCORES, QUALITY_FILTER, DOMAINS)
CURATION = (*DOCUMENT_STAGES, TOKENIZER, TOKENIZE, MIXTURE)
# An ablation variant's data: its documents without the evaluation suite's n-grams (given: `suite`), as tokens of
# the tokenizer every variant shares (given: `tokenizer`), whatever the variant's recipe says of its own tokenizer.
ABLATION_VARIANT = (*DOCUMENT_STAGES, DECONTAMINATE, dataclasses.replace(TOKENIZE, sections=()))


def run_pipeline(recipe: Recipe, run: Runner, stages: tuple[PipelineStage, ...] = CURATION,
                 given: dict[str, StageResult] | None = None) -> dict[str, StageResult]:
    """The result of each stage of `stages` the recipe enables, in order; `given`: results made elsewhere that
    stages take as inputs (an ablation's evaluation suite and shared tokenizer)."""
    results: dict[str, StageResult] = dict(given or {})
    made: dict[str, StageResult] = {}
    for entry in stages:
        if not entry.enabled(recipe):
            continue
        made[entry.name] = results[entry.name] = run(recipe, entry.build(recipe, results))
        if entry.makes_documents:
            results[DOCUMENTS] = made[entry.name]
    return made


def in_process(recipe: Recipe, stage: Stage) -> StageResult:
    """A runner for `run_pipeline`: the stage in this process (tasks.stage_run.run_in_process)."""
    from tasks.stage_run import run_in_process

    return run_in_process(stage, recipe.store)
