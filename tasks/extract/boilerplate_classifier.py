"""A logistic regression over block features (tasks/extract/block_features) that reads a block as boilerplate:
photo credits, bylines, teasers, share and subscribe lines that resiliparse's main-content heuristics keep inside
the article region. Its weights are generated (tasks/extract/boilerplate_weights.py, by
dev/boilerplate_classifier.py from the even-indexed gold pages), so a retrained model changes the
extract stage's code version and reruns it."""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from tasks.extract.block_features import FEATURE_NAMES, block_features


@functools.cache
def _model() -> tuple[float, tuple[float, ...]]:
    # imported when first used, so that the trainer runs whatever the weights file holds
    from tasks.extract.boilerplate_weights import BIAS, FEATURES, WEIGHTS

    if FEATURES != FEATURE_NAMES:
        raise ValueError("tasks/extract/boilerplate_weights.py was trained on other block features: run "
                         "dev/boilerplate_classifier.py")
    return BIAS, WEIGHTS


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
