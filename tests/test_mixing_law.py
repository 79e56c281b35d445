"""The mixing-law arithmetic of `sluice mix-search` (tasks/mixture/mixing_law.py): a law fitted to noisy losses of
a swarm recovers the law that made them, its held-out error says so, and the proposal stays within the repetition
limits while beating the natural and uniform mixtures on the law; within a trust region around the natural
mixture, widened only when the law ranks held-out runs well."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from tasks.mixture.mixing_law import (MixingLaw, fit_law, fit_tree, held_out_error, propose, swarm_mixtures,
                                      trust_region, weight_caps, within_caps)

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


def test_the_proposal_keeps_to_a_trust_region_around_natural_widened_to_the_swarm_only_for_a_reliable_law():
    """Unbounded, the law's favourite domain takes everything it can (a corner no run measured); within the trust
    region every domain keeps half its natural share and at most twice it, and the proposal still gains on the law;
    a reliable law widens each domain's bounds to the weights the swarm measured, never past a cap."""
    mixtures, losses = noisy_swarm(24, seed=0)
    law, caps = fit_law(mixtures, losses), np.ones(4)
    corner = propose(law, caps, [NATURAL])
    assert corner[0] > 0.9                                                 # the corner the region keeps out
    narrow = trust_region(NATURAL, caps, mixtures, rank_correlation=0.5, floor=0.5, ceiling=2.0, reliable=0.8)
    assert not narrow.widened
    assert np.allclose(narrow.lower, 0.5 * NATURAL) and np.allclose(narrow.upper, 2 * NATURAL)
    proposed = propose(law, narrow.upper, [NATURAL], lower=narrow.lower)
    assert proposed.sum() == pytest.approx(1)
    assert (proposed >= narrow.lower - 1e-9).all() and (proposed <= narrow.upper + 1e-9).all()
    assert proposed[0] == pytest.approx(0.2, abs=1e-6)                    # twice its natural 0.1, as far as allowed
    assert TRUE.predict(proposed)[0] < TRUE.predict(NATURAL)[0]
    wide = trust_region(NATURAL, np.array([0.3, 1, 1, 1]), mixtures, rank_correlation=0.9, floor=0.5, ceiling=2.0,
                        reliable=0.8)
    assert wide.widened and np.allclose(wide.lower, np.minimum(0.5 * NATURAL, mixtures.min(0)))
    assert np.allclose(wide.upper, np.minimum([0.3, 1, 1, 1], np.maximum(2 * NATURAL, mixtures.max(0))))
    # caps that leave the region short of a whole mixture: the caps bound it instead
    short = trust_region(NATURAL, np.array([1, 0.3, 0.2, 1]), mixtures, None, floor=0.5, ceiling=1.2, reliable=0.8)
    assert np.allclose(short.upper, [1, 0.3, 0.2, 1]) and np.allclose(short.lower, 0.5 * NATURAL)


def test_weights_moved_within_bounds_sum_to_one_and_keep_every_bound():
    lower, caps = np.array([0.05, 0.2, 0.15, 0.1]), np.array([0.2, 0.8, 0.6, 0.4])
    for weights in (np.array([0.9, 0.05, 0.03, 0.02]), np.array([0.0, 0.0, 0.0, 0.1]), np.full(4, 0.25)):
        moved = within_caps(weights, caps, lower)
        assert moved.sum() == pytest.approx(1) and (moved >= lower - 1e-12).all() and (moved <= caps + 1e-12).all()
    assert np.allclose(within_caps(np.full(4, 0.25), np.ones(4)), 0.25)               # inside already: unchanged
