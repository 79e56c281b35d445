"""Learning a data mixture from a swarm of small runs (issue 48's `sluice mix-search`, its arithmetic): the swarm's
mixtures, a regression from a mixture's weights to a measured loss, its error on members it was not fitted on, and
the mixture it predicts best under the repetition limits.

- **Swarm.** Mixtures drawn from a Dirichlet prior centred on the corpus's own shares (RegMix, Liu et al. 2024;
  Olmix 2026), `concentration` times the natural weights as its parameters: large keeps draws near the natural
  mixture, small spreads them over the simplex. The natural mixture itself is the first member.
- **Law.** Per target (a domain's bits per byte, or their mean), the mixing law of Ye et al. (2024):
  L(r) = c + exp(b + t . r), c the loss no mixture removes, t how each domain's weight moves it; fitted by bounded
  least squares (c between 0 and the smallest measured loss), from several starts, the best kept.
- **Error.** Leave-one-out over the swarm: each member predicted by the law fitted without it; Spearman rank
  correlation and mean absolute error of those predictions (what ranks mixtures is what the proposal relies on).
- **Proposal.** The mixture minimising the predicted target on the simplex with each domain's weight at most its
  cap: a domain of T tokens cannot give more than max_epochs * T of a budget of B tokens, so w <= max_epochs T / B.
  SLSQP from the natural, the uniform and the best measured mixtures (each moved inside the caps); the best wins.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares, minimize
from scipy.stats import spearmanr

STARTS = 4


def swarm_mixtures(natural: np.ndarray, count: int, concentration: float, seed: int) -> np.ndarray:
    """`count` mixtures (rows summing to 1): the natural one, then Dirichlet(concentration * natural) draws."""
    natural = _simplex(natural)
    draws = np.random.default_rng(seed).dirichlet(concentration * natural, size=count - 1)
    return np.vstack([natural, draws])


@dataclass(frozen=True)
class MixingLaw:
    constant: float          # c: the loss no mixture removes
    scale: float             # b
    slopes: np.ndarray       # t, one per domain

    def predict(self, mixtures: np.ndarray) -> np.ndarray:
        return self.constant + np.exp(self.scale + np.atleast_2d(mixtures) @ self.slopes)


def fit_law(mixtures: np.ndarray, losses: np.ndarray) -> MixingLaw:
    """The law fitted to the measured `losses` of `mixtures` (one row each)."""
    mixtures, losses = np.atleast_2d(mixtures), np.asarray(losses, np.float64)
    ceiling = float(losses.min()) * (1 - 1e-6)
    best = None
    for start in range(STARTS):
        constant = ceiling * start / STARTS
        guess = np.concatenate([[constant, np.log(max(float(losses.mean()) - constant, 1e-6))],
                                np.zeros(mixtures.shape[1])])
        fitted = least_squares(lambda p: p[0] + np.exp(p[1] + mixtures @ p[2:]) - losses, guess,
                               bounds=([0.0, -np.inf, *[-np.inf] * mixtures.shape[1]],
                                       [ceiling, np.inf, *[np.inf] * mixtures.shape[1]]))
        if best is None or fitted.cost < best.cost:
            best = fitted
    return MixingLaw(float(best.x[0]), float(best.x[1]), best.x[2:].copy())


def held_out_error(mixtures: np.ndarray, losses: np.ndarray) -> dict[str, float]:
    """Leave-one-out: each member predicted by the law fitted on the others; their rank correlation and mean
    absolute error against the measured losses."""
    mixtures, losses = np.atleast_2d(mixtures), np.asarray(losses, np.float64)
    keep = np.ones(len(losses), bool)
    predicted = np.empty(len(losses))
    for index in range(len(losses)):
        keep[index] = False
        predicted[index] = fit_law(mixtures[keep], losses[keep]).predict(mixtures[index])[0]
        keep[index] = True
    return {"rank_correlation": float(spearmanr(predicted, losses).statistic),
            "mean_absolute_error": float(np.abs(predicted - losses).mean())}


def weight_caps(tokens: np.ndarray, max_epochs: np.ndarray, budget: int) -> np.ndarray:
    """The largest weight each domain can take at a budget of `budget` tokens without passing its max_epochs."""
    return np.minimum(1.0, np.asarray(max_epochs, np.float64) * np.asarray(tokens, np.float64) / budget)


def propose(law: MixingLaw, caps: np.ndarray, starts: list[np.ndarray]) -> np.ndarray:
    """The mixture with the lowest predicted loss, each weight within [0, its cap], summing to 1."""
    caps = np.asarray(caps, np.float64)
    if caps.sum() < 1 - 1e-12:
        raise ValueError(f"the domains cannot fill the budget within their repetition limits: the caps sum to "
                         f"{caps.sum():.3f} < 1 (raise max_epochs, lower the token budget, or add data)")
    best, best_loss = None, np.inf
    for start in [*starts, np.full(caps.size, 1 / caps.size)]:
        result = minimize(lambda w: float(law.predict(w)[0]), _within_caps(start, caps), method="SLSQP",
                          bounds=list(zip(np.zeros(caps.size), caps)),
                          constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}])
        weights = _within_caps(result.x, caps)
        loss = float(law.predict(weights)[0])
        if loss < best_loss:
            best, best_loss = weights, loss
    return best


def _within_caps(weights: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """`weights` clipped to [0, caps] and brought back to a sum of 1 by filling the domains with room left."""
    weights = np.clip(np.asarray(weights, np.float64), 0, caps)
    for _ in range(caps.size):
        gap = 1 - weights.sum()
        room = caps - weights
        if abs(gap) < 1e-12 or room.sum() <= 0:
            break
        weights = np.clip(weights + (gap * room / room.sum() if gap > 0 else gap * weights / weights.sum()), 0, caps)
    return weights


def _simplex(weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, np.float64)
    return weights / weights.sum()
