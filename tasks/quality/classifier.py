"""The fastText quality classifier (DCLM-style): reference text is `__label__hq`, raw web text `__label__cc`.

Examples are split into train and held-out by a hash of their text and the seed, so the split does not depend
on file order. `hq_prob` is the probability of `__label__hq`.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile

import numpy as np

from configs.quality import ClassifierConfig
from tasks.quality.perplexity import REBUILD_HINT, ModelFileError

POSITIVE, NEGATIVE = "__label__hq", "__label__cc"
_SPACES = re.compile(r"\s+")
MAX_EXAMPLE_CHARS = 10_000


def example_text(text: str) -> str:
    """One line of lower-cased text, the form the classifier trains and predicts on."""
    return _SPACES.sub(" ", text[:MAX_EXAMPLE_CHARS].lower()).strip()


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
                     config: ClassifierConfig) -> dict:
    """Train on the non-held-out examples, save the model, return held-out precision / recall / AUC."""
    import fasttext

    examples = _balanced(positives, POSITIVE, config) + _balanced(negatives, NEGATIVE, config)
    in_heldout = [seeded_rank(text, config.seed + 1) < config.heldout_fraction for _, text in examples]
    heldout = [example for example, held in zip(examples, in_heldout) if held]
    train = [example for example, held in zip(examples, in_heldout) if not held]
    os.makedirs(os.path.dirname(model_path) or ".", exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", dir=os.path.dirname(model_path) or ".",
                                     encoding="utf-8", delete=False) as handle:
        handle.writelines(f"{label} {text}\n" for label, text in sorted(train, key=lambda e: seeded_rank(e[1], 7)))
    try:
        model = fasttext.train_supervised(input=handle.name, epoch=config.epoch, lr=config.lr, dim=config.dim,
                                          wordNgrams=config.word_ngrams, thread=1, seed=config.seed, verbose=0)
    finally:
        os.unlink(handle.name)
    model.save_model(model_path + ".tmp")
    os.replace(model_path + ".tmp", model_path)
    metrics = evaluate(QualityClassifier(model_path), [text for label, text in heldout if label == POSITIVE],
                       [text for label, text in heldout if label == NEGATIVE])
    return {"train_examples": len(train), "heldout": metrics}


def _balanced(texts: list[str], label: str, config: ClassifierConfig) -> list[tuple[str, str]]:
    examples = sorted({example_text(text) for text in texts} - {""}, key=lambda t: seeded_rank(t, config.seed))
    if len(examples) < config.min_examples:
        raise ValueError(f"quality classifier: {len(examples)} distinct {label} examples; at least "
                         f"{config.min_examples} are needed (add reference text or documents)")
    return [(label, text) for text in examples[:config.max_examples_per_class]]


def evaluate(classifier: "QualityClassifier", positives: list[str], negatives: list[str],
             threshold: float = 0.5) -> dict:
    """Precision, recall and ROC AUC of `hq_prob` on labelled texts."""
    scores = np.array([classifier.hq_prob(text) for text in positives + negatives])
    labels = np.array([1] * len(positives) + [0] * len(negatives))
    predicted = scores >= threshold
    true_positive = int((predicted & (labels == 1)).sum())
    return {"positives": len(positives), "negatives": len(negatives),
            "precision": round(true_positive / max(int(predicted.sum()), 1), 4),
            "recall": round(true_positive / max(len(positives), 1), 4), "auc": roc_auc(labels, scores)}


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """Mann-Whitney form of the ROC AUC (ties count half); None without both classes."""
    positives, negatives = int(labels.sum()), int(len(labels) - labels.sum())
    if not positives or not negatives:
        return None
    from scipy.stats import rankdata   # here, not at the top: scipy.stats costs every Dask worker ~0.5 s to import

    ranks = rankdata(scores)
    return round(float((ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives)), 4)


class QualityClassifier:
    def __init__(self, model_path: str):
        import fasttext

        if not os.path.isfile(model_path):
            raise ModelFileError(f"quality classifier {model_path} is missing; {REBUILD_HINT}")
        try:
            self.model = fasttext.load_model(model_path)
        except ValueError as error:
            raise ModelFileError(f"cannot read quality classifier {model_path} ({error}); {REBUILD_HINT}") from None

    def hq_prob(self, text: str) -> float:
        labels, probs = self.model.predict(example_text(text), k=2)
        return round(float(dict(zip(labels, probs)).get(POSITIVE, 0.0)), 5)
