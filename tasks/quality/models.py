"""The quality models a recipe trains (one KenLM pair per reference language, one fastText classifier), and
the `models.json` index that scoring reads them by."""
from __future__ import annotations

import heapq
import json
import os
import time
from dataclasses import dataclass

from configs.quality import ClassifierConfig, KenlmConfig
from storage.document_shard import read_documents
from tasks.quality.classifier import (CALIBRATION_SUFFIX, chunk_lines, evaluate, seeded_rank,
                                     train_classifier)
from tasks.quality.perplexity import REBUILD_HINT, KenlmModelFiles, ModelFileError, train_kenlm
from tasks.quality.reference import read_reference, reference_files, without_heldout

MODELS_FILE = "models.json"
CLASSIFIER_FILE = "classifier.bin"


@dataclass(frozen=True)
class QualityModels:
    kenlm: dict[str, KenlmModelFiles]
    classifier: str | None

    @classmethod
    def load(cls, models_dir: str) -> "QualityModels":
        path = os.path.join(models_dir, MODELS_FILE)
        if not os.path.isfile(path):
            raise ModelFileError(f"quality model index {path} is missing; {REBUILD_HINT}")
        with open(path) as handle:
            raw = json.load(handle)
        return cls(kenlm={lang: KenlmModelFiles(os.path.join(models_dir, files["sentencepiece"]),
                                                os.path.join(models_dir, files["kenlm"]))
                          for lang, files in raw["kenlm"].items()},
                   classifier=os.path.join(models_dir, raw["classifier"]) if raw["classifier"] else None)


def write_models_index(models_dir: str, kenlm: list[dict], classifier: dict | None) -> None:
    index = {"kenlm": {row["lang"]: {"sentencepiece": row["sentencepiece"], "kenlm": row["kenlm"]} for row in kenlm},
             "classifier": classifier["model"] if classifier else None}
    with open(os.path.join(models_dir, MODELS_FILE), "w") as handle:
        json.dump(index, handle, indent=2, sort_keys=True)


def train_language_model(lang: str, paths: list[str], models_dir: str, config: KenlmConfig) -> dict:
    started = time.perf_counter()
    lines, heldout = without_heldout(read_reference(paths, config.min_reference_chars, f"KenLM reference for {lang!r}"),
                                     config.heldout_ngrams)
    files = train_kenlm(lines, os.path.join(models_dir, "kenlm"), lang, config)
    return {"lang": lang, "reference_files": len(reference_files(paths)), "reference_lines": len(lines),
            "reference_lines_heldout": heldout,
            "reference_chars": sum(len(line) for line in lines),
            "sentencepiece": os.path.relpath(files.sentencepiece, models_dir),
            "kenlm": os.path.relpath(files.kenlm, models_dir), "kenlm_bytes": os.path.getsize(files.kenlm),
            "seconds": round(time.perf_counter() - started, 3)}


def train_quality_classifier(negative_shards: list[str], models_dir: str, config: ClassifierConfig,
                             evaluation: dict[str, list[str]]) -> dict:
    """Positives: reference text in chunks; negatives: documents of the raw extraction output, chosen by a
    seeded hash of their id (the same whatever the sharding). `evaluation` = labelled files never trained on."""
    started = time.perf_counter()
    lines, heldout = without_heldout(read_reference(config.positives, 1, "quality classifier positives"),
                                     config.heldout_ngrams)
    positives = chunk_lines(lines, config.positive_chunk_chars)
    negatives = _sample_documents(negative_shards, config.max_examples_per_class, config.seed)
    model_path = os.path.join(models_dir, CLASSIFIER_FILE)
    result, classifier = train_classifier(positives, negatives, model_path, config)
    external = {}
    if evaluation.get("positives") or evaluation.get("negatives"):
        external = evaluate(classifier, _labelled_examples(evaluation.get("positives", []), config),
                            _labelled_examples(evaluation.get("negatives", []), config))
    return result | {"model": CLASSIFIER_FILE, "calibration_file": CLASSIFIER_FILE + CALIBRATION_SUFFIX,
                     "positive_pool": len(positives), "negative_pool": len(negatives),
                     "positive_lines_heldout": heldout,
                     "external": external, "seconds": round(time.perf_counter() - started, 3)}


def _sample_documents(shard_urls: list[str], count: int, seed: int) -> list[str]:
    def ranked():
        for url in shard_urls:
            table = read_documents(url, columns=["id", "text"])
            for doc_id, text in zip(table.column("id").to_pylist(), table.column("text").to_pylist()):
                yield seeded_rank(doc_id, seed), doc_id, text
    return [text for _, _, text in heapq.nsmallest(count, ranked())]


def _labelled_examples(paths: list[str], config: ClassifierConfig) -> list[str]:
    return chunk_lines(read_reference(paths, 1, "classifier evaluation text"), config.positive_chunk_chars) \
        if paths else []
