"""Calibration of the quality classifier's probability: Platt scaling (Platt 1999) fitted on held-out examples the
classifier never trained on, and the reliability figures that show whether a probability means what it says.

fastText's softmax after a few epochs is overconfident (most scores sit near 0 or 1). Platt scaling fits
p' = sigmoid(a * logit(p) + b) by maximum likelihood, with Platt's smoothed targets so a perfectly separated
held-out set does not push a to infinity. It is monotone, so a keep-top-k threshold keeps the same documents;
what changes is that `min_hq_prob: 0.8` then means "80% of documents scored like this are high quality".
"""
from __future__ import annotations

import math

import numpy as np

EPSILON = 1e-6           # probabilities are clipped to [EPSILON, 1 - EPSILON] before the logit
RELIABILITY_BINS = 10


def logit(probabilities: np.ndarray) -> np.ndarray:
    clipped = np.clip(probabilities, EPSILON, 1 - EPSILON)
    return np.log(clipped / (1 - clipped))


def fit_platt(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(a, b) of p' = sigmoid(a * logit(score) + b) minimising the log loss against Platt's targets
    (N+ + 1) / (N+ + 2) and 1 / (N- + 2) (convex: L-BFGS from the identity a = 1, b = 0)."""
    from scipy.optimize import minimize

    x = logit(np.asarray(scores, float))
    labels = np.asarray(labels, int)
    positives, negatives = int(labels.sum()), int(len(labels) - labels.sum())
    if not positives or not negatives:
        raise ValueError(f"calibration needs both classes among the held-out examples ({positives} positive, "
                         f"{negatives} negative)")
    target = np.where(labels == 1, (positives + 1) / (positives + 2), 1 / (negatives + 2))

    def loss(parameters: np.ndarray) -> tuple[float, np.ndarray]:
        z = parameters[0] * x + parameters[1]
        # log(1 + e^z) - t z, the cross-entropy of sigmoid(z) against t, computed stably
        value = np.sum(np.logaddexp(0, z) - target * z)
        residual = 1 / (1 + np.exp(-z)) - target
        return float(value), np.array([np.sum(residual * x), np.sum(residual)])

    a, b = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B",
                    options={"ftol": 1e-12, "gtol": 1e-9}).x
    return float(a), float(b)


def calibrated(probability: float, a: float, b: float) -> float:
    clipped = min(max(probability, EPSILON), 1 - EPSILON)
    return 1 / (1 + math.exp(-(a * math.log(clipped / (1 - clipped)) + b)))


def reliability(scores: np.ndarray, labels: np.ndarray, bins: int = RELIABILITY_BINS) -> dict:
    """Per equal-width probability bin: examples, mean predicted probability and observed share of positives;
    and the expected calibration error (the examples-weighted mean |observed - predicted|)."""
    scores, labels = np.asarray(scores, float), np.asarray(labels, int)
    index = np.minimum((scores * bins).astype(int), bins - 1)
    rows, error = [], 0.0
    for bin_index in range(bins):
        inside = index == bin_index
        if not inside.any():
            continue
        predicted, observed = float(scores[inside].mean()), float(labels[inside].mean())
        rows.append({"low": bin_index / bins, "high": (bin_index + 1) / bins, "examples": int(inside.sum()),
                     "predicted": round(predicted, 4), "observed": round(observed, 4)})
        error += inside.sum() * abs(observed - predicted)
    return {"bins": rows, "ece": round(error / max(len(scores), 1), 4)}
