"""Learning a data mixture from a swarm of small runs (issue 48's `sluice mix-search`, its arithmetic): the swarm's
mixtures, a regression from a mixture's weights to a measured loss, its error on members it was not fitted on, and
the mixture it predicts best under the repetition limits.

- **Swarm.** Mixtures drawn from a Dirichlet prior centred on the corpus's own shares (RegMix, Liu et al. 2024;
  Olmix 2026), `concentration` times the natural weights as its parameters: large keeps draws near the natural
  mixture, small spreads them over the simplex. The natural mixture itself is the first member.
- **Law.** Per target (a domain's bits per byte, or their mean), the mixing law of Ye et al. (2024):
  L(r) = c + exp(b + t . r), c the loss no mixture removes, t how each domain's weight moves it; fitted by bounded
  least squares (c between 0 and the smallest measured loss), from several starts, the best kept. Or, as RegMix's
  LightGBM, gradient-boosted trees from the weights to the loss (`fit_tree`): no form assumed, but flat between
  the swarm's points and no extrapolation past them.
- **Error.** Leave-one-out over the swarm: each member predicted by the law fitted without it; Spearman rank
  correlation and mean absolute error of those predictions (what ranks mixtures is what the proposal relies on).
- **Trust region.** A law fitted on a dozen points and pushed to a corner it never saw predicts gains it does not
  deliver (RegMix and Olmix warn of it), so the proposal stays near the natural mixture: each domain between `floor`
  and `ceiling` times its natural share (and within its cap). Only where the law is reliable (its leave-one-out
  rank correlation on the target at least `reliable`) is the region widened, per domain to the range of weights
  the swarm measured: the law is trusted where it was seen to rank, never past its data.
- **Proposal.** The mixture minimising the predicted target on the simplex with each domain's weight within its
  bounds (a domain of T tokens cannot give more than max_epochs * T of a budget of B tokens: w <= max_epochs T / B
  caps every region). RegMix's search (the best of SEARCH_DRAWS random mixtures within the bounds), then SLSQP from
  it and from the natural, the uniform and the best measured mixtures (each moved inside the bounds); the best wins.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.optimize import least_squares, minimize
from scipy.stats import spearmanr

STARTS = 4
SEARCH_DRAWS = 20_000


class Law(Protocol):
    def predict(self, mixtures: np.ndarray) -> np.ndarray:
        """The predicted loss of each mixture (one row each)."""


def swarm_mixtures(natural: np.ndarray, count: int, concentration: float, seed: int,
                   caps: np.ndarray | None = None) -> np.ndarray:
    """`count` mixtures (rows summing to 1): the natural one, then Dirichlet(concentration * natural) draws, each
    moved within `caps` when given (a draw the corpus cannot supply within its repetition limits)."""
    natural = _simplex(natural)
    draws = np.random.default_rng(seed).dirichlet(concentration * natural, size=count - 1)
    if caps is not None:
        draws = np.array([within_caps(draw, caps) for draw in draws])
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


@dataclass(frozen=True)
class TreeLaw:
    model: object            # a fitted sklearn GradientBoostingRegressor

    def predict(self, mixtures: np.ndarray) -> np.ndarray:
        return self.model.predict(np.atleast_2d(mixtures))


def fit_tree(mixtures: np.ndarray, losses: np.ndarray) -> TreeLaw:
    """Gradient-boosted regression trees from the weights to the losses (RegMix fits LightGBM; sklearn's trees are
    the same model family, already a dependency), seeded."""
    from sklearn.ensemble import GradientBoostingRegressor

    model = GradientBoostingRegressor(n_estimators=200, learning_rate=0.05, max_depth=2, min_samples_leaf=2,
                                      random_state=0)
    return TreeLaw(model.fit(np.atleast_2d(mixtures), np.asarray(losses, np.float64)))


FITS: dict[str, Callable[[np.ndarray, np.ndarray], Law]] = {"log_linear": fit_law, "tree": fit_tree}


def held_out_error(mixtures: np.ndarray, losses: np.ndarray, fit: Callable = fit_law) -> dict:
    """Leave-one-out: each member predicted by the law fitted on the others; their rank correlation and mean
    absolute error against the measured losses, and the predictions (`predicted`, one per member)."""
    mixtures, losses = np.atleast_2d(mixtures), np.asarray(losses, np.float64)
    keep = np.ones(len(losses), bool)
    predicted = np.empty(len(losses))
    for index in range(len(losses)):
        keep[index] = False
        predicted[index] = fit(mixtures[keep], losses[keep]).predict(mixtures[index])[0]
        keep[index] = True
    return {"rank_correlation": float(spearmanr(predicted, losses).statistic),
            "mean_absolute_error": float(np.abs(predicted - losses).mean()), "predicted": predicted.tolist()}


def weight_caps(tokens: np.ndarray, max_epochs: np.ndarray, budget: int) -> np.ndarray:
    """The largest weight each domain can take at a budget of `budget` tokens without passing its max_epochs."""
    return np.minimum(1.0, np.asarray(max_epochs, np.float64) * np.asarray(tokens, np.float64) / budget)


@dataclass(frozen=True)
class TrustRegion:
    lower: np.ndarray        # per domain, the least weight the proposal may give it
    upper: np.ndarray        # ... and the most (never past its cap)
    widened: bool            # the law was reliable: the bounds cover what the swarm measured


def trust_region(natural: np.ndarray, caps: np.ndarray, swarm: np.ndarray, rank_correlation: float | None,
                 floor: float, ceiling: float, reliable: float) -> TrustRegion:
    """The bounds the proposal keeps to: [floor, ceiling] x each natural share, within the caps; widened per domain
    to the swarm's measured weights (rows of `swarm`) when the law's held-out `rank_correlation` is at least
    `reliable`. A region the caps leave short of a whole mixture takes the caps as its upper bounds."""
    natural, caps = _simplex(natural), np.asarray(caps, np.float64)
    lower, upper = floor * natural, ceiling * natural
    widened = rank_correlation is not None and bool(np.isfinite(rank_correlation)) and rank_correlation >= reliable
    if widened:
        lower, upper = np.minimum(lower, swarm.min(axis=0)), np.maximum(upper, swarm.max(axis=0))
    upper = np.minimum(upper, caps)
    if upper.sum() < 1:
        upper = caps
    return TrustRegion(np.minimum(lower, upper), upper, widened)


def propose(law: Law, caps: np.ndarray, starts: list[np.ndarray], seed: int = 0,
            lower: np.ndarray | None = None) -> np.ndarray:
    """The mixture with the lowest predicted loss, each weight within [lower (default 0), its cap], summing to 1."""
    caps = np.asarray(caps, np.float64)
    lower = np.zeros(caps.size) if lower is None else np.asarray(lower, np.float64)
    if caps.sum() < 1 - 1e-12:
        raise ValueError(f"the domains cannot fill the budget within their repetition limits: the caps sum to "
                         f"{caps.sum():.3f} < 1 (raise max_epochs, lower the token budget, or add data)")
    # uniform over the mixtures above the lower bounds, then those within the caps
    drawn = lower + (1 - lower.sum()) * np.random.default_rng(seed).dirichlet(np.ones(caps.size), size=SEARCH_DRAWS)
    drawn = drawn[(drawn <= caps).all(axis=1)]
    searched = [drawn[law.predict(drawn).argmin()]] if len(drawn) else []
    best, best_loss = None, np.inf
    for start in [*searched, *starts, np.full(caps.size, 1 / caps.size)]:
        result = minimize(lambda w: float(law.predict(w)[0]), within_caps(start, caps, lower), method="SLSQP",
                          bounds=list(zip(lower, caps)), constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}])
        weights = within_caps(result.x, caps, lower)
        loss = float(law.predict(weights)[0])
        if loss < best_loss:
            best, best_loss = weights, loss
    return best


def within_caps(weights: np.ndarray, caps: np.ndarray, lower: np.ndarray | None = None) -> np.ndarray:
    """`weights` clipped to [lower (default 0), caps] and brought back to a sum of 1: a shortfall filled in
    proportion to each domain's room below its cap, an excess taken in proportion to each one's weight above its
    lower bound."""
    lower = np.zeros(caps.size) if lower is None else lower
    weights = np.clip(np.asarray(weights, np.float64), lower, caps)
    for _ in range(caps.size):
        gap = 1 - weights.sum()
        room, spare = caps - weights, weights - lower
        if abs(gap) < 1e-12 or (room if gap > 0 else spare).sum() <= 0:
            break
        weights = np.clip(weights + gap * (room / room.sum() if gap > 0 else spare / spare.sum()), lower, caps)
    return weights


def _simplex(weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, np.float64)
    return weights / weights.sum()
