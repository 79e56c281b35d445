"""The fastText quality classifier (DCLM-style): reference text is `__label__hq`, raw web text `__label__cc`.

Examples are split into train and held-out by a hash of their text and the seed, so the split does not depend
on file order; the held-out examples are split again in two halves, one to calibrate the probability (Platt
scaling, tasks/quality/calibration.py, saved beside the model) and one to measure it. `hq_prob` is the
calibrated probability of `__label__hq`.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from configs.quality import ClassifierConfig
from tasks.errors import TooLittleData
from tasks.quality import fasttext_fit
from tasks.quality.calibration import calibrated, fit_platt, reliability
from tasks.quality.perplexity import REBUILD_HINT, ModelFileError

POSITIVE, NEGATIVE = "__label__hq", "__label__cc"
MORE_EXAMPLES = {POSITIVE: "add reference text (quality.classifier.positives)",
                 NEGATIVE: "add input (the raw extracted pages are the other class)"}
CALIBRATION_SUFFIX = ".calibration.json"          # beside the model: Platt's a and b
REPORT_THRESHOLDS = (0.1, 0.3, 0.5, 0.7, 0.9)
MAX_EXAMPLE_CHARS = 10_000


def example_text(text: str) -> str:
    """One line of lower-cased text, the form the classifier trains and predicts on: runs of whitespace as one
    space (str.split's whitespace is the regex `\\s`'s; splitting took a third of the time of substituting)."""
    return " ".join(text[:MAX_EXAMPLE_CHARS].lower().split())


def chunk_lines(lines: list[str], chunk_chars: int) -> list[str]:
    """Consecutive lines joined into examples of about `chunk_chars` characters."""
    chunks, current, size = [], [], 0
    for line in lines:
        current.append(line)
        size += len(line) + 1
        if size >= chunk_chars:
            chunks.append("\n".join(current))
            current, size = [], 0
    if current:
        chunks.append("\n".join(current))
    return chunks


def seeded_rank(text: str, seed: int) -> float:
    """A number in [0, 1) from the text and the seed: sampling and splitting by it ignore input order."""
    digest = hashlib.blake2b(f"{seed}:{text}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0 ** 64


def train_classifier(positives: list[str], negatives: list[str], model_path: str,
                     config: ClassifierConfig) -> tuple[dict, "QualityClassifier"]:
    """Train on the non-held-out examples, save the model and its calibration (fitted on one half of the held-out
    examples); precision / recall / AUC / calibration error on the other half, and the calibrated classifier (the
    64 MB model read once)."""
    examples = _balanced(positives, POSITIVE, config) + _balanced(negatives, NEGATIVE, config)
    in_heldout = [seeded_rank(text, config.seed + 1) < config.heldout_fraction for _, text in examples]
    heldout = [example for example, held in zip(examples, in_heldout) if held]
    train = [example for example, held in zip(examples, in_heldout) if not held]
    os.makedirs(os.path.dirname(model_path) or ".", exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", dir=os.path.dirname(model_path) or ".",
                                     encoding="utf-8", delete=False) as handle:
        handle.writelines(f"{label} {text}\n" for label, text in sorted(train, key=lambda e: seeded_rank(e[1], 7)))
    try:
        _train_supervised(handle.name, config, model_path + ".tmp")
    finally:
        os.unlink(handle.name)
    os.replace(model_path + ".tmp", model_path)
    fitting = [example for example in heldout if seeded_rank(example[1], config.seed + 2) < 0.5]
    measuring = [example for example in heldout if seeded_rank(example[1], config.seed + 2) >= 0.5]
    classifier = QualityClassifier(model_path)
    classifier.calibration = _calibrate(classifier, fitting, model_path)     # what the file it wrote holds
    metrics = evaluate(classifier, [text for label, text in measuring if label == POSITIVE],
                       [text for label, text in measuring if label == NEGATIVE])
    return {"train_examples": len(train), "calibration": classifier.calibration, "heldout": metrics}, classifier


def _train_supervised(path: str, config: ClassifierConfig, output: str) -> None:
    """fastText's supervised model of the file at `path`, on one thread from the config's seed, saved to `output`;
    trained in a fresh process (tasks/quality/fasttext_fit.py says why)."""
    arguments = {"input": path, "output": output, "epoch": config.epoch, "lr": config.lr, "dim": config.dim,
                 "wordNgrams": config.word_ngrams, "bucket": config.bucket, "thread": 1, "seed": config.seed,
                 "verbose": 0}
    done = subprocess.run([sys.executable, fasttext_fit.__file__, json.dumps(arguments)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise RuntimeError(f"fastText's training of {path} failed: {lines[-1] if lines else done.returncode}")


def _calibrate(classifier: "QualityClassifier", examples: list[tuple[str, str]], model_path: str) -> dict:
    """Platt's a and b from the uncalibrated classifier's scores on `examples`, saved beside the model."""
    scores = np.array([classifier.hq_prob(text) for _, text in examples])
    labels = np.array([label == POSITIVE for label, _ in examples], int)
    a, b = fit_platt(scores, labels)
    calibration = {"method": "platt", "a": round(a, 6), "b": round(b, 6), "fitted_on": len(examples)}
    with open(model_path + CALIBRATION_SUFFIX + ".tmp", "w") as handle:
        json.dump(calibration, handle)
    os.replace(model_path + CALIBRATION_SUFFIX + ".tmp", model_path + CALIBRATION_SUFFIX)
    return calibration


def _balanced(texts: list[str], label: str, config: ClassifierConfig) -> list[tuple[str, str]]:
    examples = sorted({example_text(text) for text in texts} - {""}, key=lambda t: seeded_rank(t, config.seed))
    if len(examples) < config.min_examples:
        raise TooLittleData(f"quality classifier: {len(examples)} distinct {label} examples, at least "
                            f"{config.min_examples} are needed: {MORE_EXAMPLES[label]}, lower "
                            f"quality.classifier.min_examples, or set quality.classifier.enabled: false")
    return [(label, text) for text in examples[:config.max_examples_per_class]]


def evaluate(classifier: "QualityClassifier", positives: list[str], negatives: list[str],
             threshold: float = 0.5) -> dict:
    """Precision and recall of `hq_prob` at `threshold` and at each of REPORT_THRESHOLDS, ROC AUC, and the
    reliability of the probabilities with and without calibration, on labelled texts."""
    texts = positives + negatives
    predicted = [classifier.raw_probability(text) for text in texts]
    scores = np.array([classifier.rounded(probability) for probability in predicted])
    raw = np.array([classifier.rounded(probability, calibrate=False) for probability in predicted])
    labels = np.array([1] * len(positives) + [0] * len(negatives))
    return {"positives": len(positives), "negatives": len(negatives), "threshold": threshold,
            **precision_recall(scores, labels, threshold), "auc": roc_auc(labels, scores),
            "at_thresholds": [{"threshold": value, **precision_recall(scores, labels, value)}
                              for value in REPORT_THRESHOLDS],
            "reliability": reliability(scores, labels), "reliability_uncalibrated": reliability(raw, labels)}


def precision_recall(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict:
    predicted = scores >= threshold
    true_positive = int((predicted & (labels == 1)).sum())
    return {"precision": round(true_positive / max(int(predicted.sum()), 1), 4),
            "recall": round(true_positive / max(int(labels.sum()), 1), 4)}


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """Mann-Whitney form of the ROC AUC (ties count half); None without both classes."""
    positives, negatives = int(labels.sum()), int(len(labels) - labels.sum())
    if not positives or not negatives:
        return None
    # for each positive, the negatives scored below it and half those scored the same (no scipy.stats: importing
    # it took ~0.45 s of the classifier's call, the quality models stage's longest)
    negative_scores = np.sort(scores[labels == 0])
    positive_scores = scores[labels == 1]
    below = np.searchsorted(negative_scores, positive_scores, side="left")
    equal = np.searchsorted(negative_scores, positive_scores, side="right") - below
    return round(float((below.sum() + equal.sum() / 2) / (positives * negatives)), 4)


class QualityClassifier:
    def __init__(self, model_path: str):
        import fasttext

        if not os.path.isfile(model_path):
            raise ModelFileError(f"quality classifier {model_path} is missing; {REBUILD_HINT}")
        try:
            self.model = fasttext.load_model(model_path)
        except ValueError as error:
            raise ModelFileError(f"cannot read quality classifier {model_path} ({error}); {REBUILD_HINT}") from None
        calibration_path = model_path + CALIBRATION_SUFFIX
        self.calibration = None
        if os.path.isfile(calibration_path):
            with open(calibration_path) as handle:
                self.calibration = json.load(handle)

    def hq_prob(self, text: str, calibrate: bool = True) -> float:
        """The probability that `text` is high quality: calibrated when the model has a calibration."""
        return self.rounded(self.raw_probability(text), calibrate)

    def raw_probability(self, text: str) -> float:
        """The model's own probability of the high-quality label, unrounded."""
        labels, probs = self.model.predict(example_text(text), k=2)
        return float(dict(zip(labels, probs)).get(POSITIVE, 0.0))

    def rounded(self, probability: float, calibrate: bool = True) -> float:
        """`hq_prob` of a text from its raw probability."""
        if calibrate and self.calibration:
            probability = calibrated(probability, self.calibration["a"], self.calibration["b"])
        return round(probability, 5)
