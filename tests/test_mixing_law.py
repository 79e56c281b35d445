"""The mixing-law arithmetic of `sluice mix-search` (tasks/mixture/mixing_law.py): a law fitted to noisy losses of
a swarm recovers the law that made them, its held-out error says so, and the proposal stays within the repetition
limits while beating the natural and uniform mixtures on the law."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from tasks.mixture.mixing_law import (MixingLaw, fit_law, fit_tree, held_out_error, propose, swarm_mixtures,
                                      weight_caps)

TRUE = MixingLaw(constant=0.9, scale=0.2, slopes=np.array([-1.6, 0.5, -0.4, 0.8]))
NATURAL = np.array([0.1, 0.4, 0.3, 0.2])
NOISE = 0.003           # bits per byte: about a seed's spread for the small proxies


def noisy_swarm(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    mixtures = swarm_mixtures(NATURAL, count, concentration=4.0, seed=seed)
    return mixtures, TRUE.predict(mixtures) + np.random.default_rng(seed + 1).normal(0, NOISE, count)


def test_the_swarm_starts_at_the_natural_mixture_and_stays_on_the_simplex():
    mixtures = swarm_mixtures(NATURAL * 10, 30, concentration=4.0, seed=0)
    assert mixtures.shape == (30, 4) and np.allclose(mixtures.sum(1), 1) and (mixtures >= 0).all()
    assert np.allclose(mixtures[0], NATURAL)
    assert np.array_equal(mixtures, swarm_mixtures(NATURAL, 30, concentration=4.0, seed=0))      # seeded
    assert not np.array_equal(mixtures, swarm_mixtures(NATURAL, 30, concentration=4.0, seed=1))


def test_the_fitted_law_recovers_a_known_law_from_noisy_swarm_losses():
    mixtures, losses = noisy_swarm(24, seed=0)
    law = fit_law(mixtures, losses)
    unseen = swarm_mixtures(NATURAL, 200, concentration=1.0, seed=7)       # wider than the swarm
    truth, predicted = TRUE.predict(unseen), law.predict(unseen)
    assert np.abs(predicted - truth).mean() < 0.01                        # stated tolerance: 0.01 bits per byte
    assert spearmanr(predicted, truth).statistic > 0.95
    error = held_out_error(mixtures, losses)
    assert error["rank_correlation"] > 0.8 and error["mean_absolute_error"] < 3 * NOISE


def test_held_out_error_exposes_a_law_that_does_not_hold():
    mixtures, _ = noisy_swarm(24, seed=0)
    unrelated = np.random.default_rng(3).normal(1.5, 0.05, len(mixtures))   # losses that no mixing explains
    assert held_out_error(mixtures, unrelated)["rank_correlation"] < 0.5


def test_the_proposal_respects_the_repetition_limits_and_beats_natural_and_uniform():
    mixtures, losses = noisy_swarm(24, seed=0)
    law = fit_law(mixtures, losses)
    # domain 0 (the one the law favours) has 15,000 tokens; at 100,000 tokens and 2 epochs it can give 30%
    caps = weight_caps(np.array([15_000, 400_000, 300_000, 200_000]), np.array([2, 2, 2, 2]), 100_000)
    assert np.allclose(caps, [0.3, 1, 1, 1])
    proposed = propose(law, caps, [NATURAL, mixtures[losses.argmin()]])
    assert proposed.sum() == pytest.approx(1) and (proposed >= 0).all() and (proposed <= caps + 1e-9).all()
    assert proposed[0] == pytest.approx(0.3, abs=1e-6)                    # as much as the limit allows
    uniform = np.full(4, 0.25)
    assert TRUE.predict(proposed)[0] < min(TRUE.predict(NATURAL)[0], TRUE.predict(uniform)[0])
    with pytest.raises(ValueError, match="caps sum to 0.600"):
        propose(law, np.array([0.15, 0.15, 0.15, 0.15]), [NATURAL])


def test_swarm_draws_stay_within_the_repetition_caps():
    caps = np.array([0.15, 1, 1, 1])
    mixtures = swarm_mixtures(NATURAL, 40, concentration=1.0, seed=0, caps=caps)
    assert np.allclose(mixtures.sum(1), 1) and (mixtures <= caps + 1e-9).all()
    assert (swarm_mixtures(NATURAL, 40, concentration=1.0, seed=0)[:, 0] > 0.15).any()    # the caps did bind


def test_the_tree_law_ranks_held_out_mixtures_and_its_proposal_respects_the_caps():
    mixtures, losses = noisy_swarm(48, seed=0)
    error = held_out_error(mixtures, losses, fit=fit_tree)
    assert error["rank_correlation"] > 0.6 and len(error["predicted"]) == 48
    caps = np.array([0.3, 1, 1, 1])
    proposed = propose(fit_tree(mixtures, losses), caps, [NATURAL])
    assert proposed.sum() == pytest.approx(1) and (proposed <= caps + 1e-9).all()
    assert TRUE.predict(proposed)[0] < TRUE.predict(NATURAL)[0]
