"""A logistic regression over block features (tasks/extract/block_features) that reads a block as boilerplate:
photo credits, bylines, teasers, share and subscribe lines that resiliparse's main-content heuristics keep inside
the article region. Its weights are a data file (tasks/extract/models/boilerplate_classifier.json, written by
dev/boilerplate_classifier.py from the even-indexed gold pages) whose content is in the extract stage's fingerprint
(tasks/extract/model_files.py), so a retrained model reruns the stage."""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from tasks.extract.block_features import FEATURE_NAMES, block_features
from tasks.extract.model_files import BOILERPLATE_CLASSIFIER, load_model


@functools.cache
def _model() -> tuple[float, tuple[float, ...]]:
    model = load_model(BOILERPLATE_CLASSIFIER, FEATURE_NAMES)
    return model["bias"], tuple(model["weights"])


def boilerplate_probabilities(blocks: Sequence) -> list[float]:
    bias, weights = _model()
    return [_sigmoid(bias + sum(weight * value for weight, value in zip(weights, row)))
            for row in block_features(blocks)]


def without_boilerplate(blocks: Sequence, max_probability: float) -> list:
    """The blocks whose probability of being boilerplate is at most `max_probability`, in order."""
    return [block for block, probability in zip(blocks, boilerplate_probabilities(blocks))
            if probability <= max_probability]


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value)) if value >= 0 else math.exp(value) / (1.0 + math.exp(value))
