"""Platt scaling and the reliability figures, on synthetic scores whose true calibration is known."""
from __future__ import annotations

import numpy as np
import pytest

from tasks.quality.calibration import calibrated, fit_platt, logit, reliability
from tasks.quality.classifier import roc_auc


def test_platt_recovers_a_known_miscalibration():
    rng = np.random.default_rng(0)
    true_a, true_b = 0.4, -0.8                   # an overconfident score: its logit is 2.5x the true one, shifted
    scores = 1 / (1 + np.exp(-rng.normal(0, 4, 20_000)))
    truth = 1 / (1 + np.exp(-(true_a * logit(scores) + true_b)))
    labels = (rng.random(len(scores)) < truth).astype(int)
    a, b = fit_platt(scores, labels)
    assert a == pytest.approx(true_a, abs=0.03) and b == pytest.approx(true_b, abs=0.06)
    fixed = np.array([calibrated(score, a, b) for score in scores])
    assert reliability(fixed, labels)["ece"] < 0.02 < reliability(scores, labels)["ece"]


def test_a_separable_held_out_set_gives_a_finite_fit_and_one_class_is_refused():
    a, b = fit_platt(np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1]))
    assert np.isfinite(a) and np.isfinite(b) and a > 0
    with pytest.raises(ValueError, match="both classes"):
        fit_platt(np.array([0.3, 0.7]), np.array([1, 1]))


def test_reliability_bins_and_expected_calibration_error_by_hand():
    scores = np.array([0.05, 0.05, 0.95, 0.95, 0.95, 0.95])
    labels = np.array([0, 1, 1, 1, 1, 0])
    result = reliability(scores, labels)
    assert [(row["examples"], row["observed"]) for row in result["bins"]] == [(2, 0.5), (4, 0.75)]
    assert result["ece"] == pytest.approx((2 * 0.45 + 4 * 0.2) / 6, abs=1e-4)


def test_roc_auc_counts_ties_half_and_needs_both_classes():
    # positive 0.9 beats both negatives, positive 0.5 beats 0.1 and ties 0.5: 3.5 of 4 pairs
    assert roc_auc(np.array([1, 0, 1, 0]), np.array([0.9, 0.1, 0.5, 0.5])) == 0.875
    assert roc_auc(np.array([0, 0, 1]), np.array([0.2, 0.2, 0.2])) == 0.5
    assert roc_auc(np.array([1, 1]), np.array([0.3, 0.7])) is None
    rng = np.random.default_rng(1)
    labels, scores = rng.integers(0, 2, 500), rng.random(500).round(2)
    pairs = [(p > n) + 0.5 * (p == n) for p in scores[labels == 1] for n in scores[labels == 0]]
    assert roc_auc(labels, scores) == round(float(np.mean(pairs)), 4)
