"""L(N, D) = E + A / N^alpha + B / D^beta: fitting it to a ladder of runs, and what it says about sizing a run.

The fit is Chinchilla's approach 3 (Hoffmann et al. 2022, appendix D.2): minimise the Huber loss (delta 1e-3)
between log L and LSE(a - alpha log N, b - beta log D, e), with A = e^a, B = e^b, E = e^e, by L-BFGS from a grid
of starts, keeping the best. Confidence intervals come from refitting bootstrap resamples of the runs (started
from the full fit, as the grid search would find the same basin).

Compute-optimal sizing under C = 6 N D (Chinchilla's closed form): N*(C) = G (C/6)^(beta/(alpha+beta)),
D*(C) = (C/6) / N*, G = (alpha A / (beta B))^(1/(alpha+beta)).
"""
from __future__ import annotations

import itertools
import json
import math
import sys
from dataclasses import asdict, dataclass

import numpy as np

HUBER_DELTA = 1e-3
# Starts for L-BFGS (alpha, beta, e, a, b): Chinchilla's grid, thinned where its points converge to the same fit.
START_GRID = {"alpha": (0.2, 0.5, 1.0), "beta": (0.2, 0.5, 1.0), "e": (-1.0, 0.0, 1.0),
              "a": (0.0, 5.0, 10.0, 20.0), "b": (0.0, 5.0, 10.0, 20.0)}
FITTED_STARTS = 24          # L-BFGS runs from the grid points with the lowest objective, not from all 432


@dataclass(frozen=True)
class ScalingLaw:
    E: float
    A: float
    B: float
    alpha: float
    beta: float

    def loss(self, n_params, tokens):
        return self.E + self.A / np.power(n_params, self.alpha) + self.B / np.power(tokens, self.beta)

    def compute_optimal(self, flops: float) -> dict:
        """N*, D* and tokens per parameter that minimise the loss at `flops` = 6 N D."""
        scale = (self.alpha * self.A / (self.beta * self.B)) ** (1 / (self.alpha + self.beta))
        n_params = scale * (flops / 6) ** (self.beta / (self.alpha + self.beta))
        tokens = flops / 6 / n_params
        return {"flops": flops, "n_params": n_params, "tokens": tokens, "tokens_per_parameter": tokens / n_params,
                "loss": float(self.loss(n_params, tokens))}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def load(cls, path) -> "ScalingLaw":
        """From a JSON file holding E, A, B, alpha and beta at its top level or under "law"."""
        with open(path) as handle:
            found = json.load(handle)
        values = found.get("law", found)
        missing = [name for name in ("E", "A", "B", "alpha", "beta") if name not in values]
        if missing:
            raise ValueError(f"{path}: not a scaling law (no {', '.join(missing)})")
        return cls(**{name: float(values[name]) for name in ("E", "A", "B", "alpha", "beta")})


# Hoffmann et al. 2022, approach 3 (their fitted law, in nats per token on MassiveText).
CHINCHILLA = ScalingLaw(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)


def _objective(theta: np.ndarray, log_n: np.ndarray, log_d: np.ndarray, log_loss: np.ndarray):
    """Summed Huber loss of log L against the law, and its gradient in (a, b, e, alpha, beta)."""
    a, b, e, alpha, beta = theta
    terms = np.stack([a - alpha * log_n, b - beta * log_d, np.full_like(log_n, e)])
    peak = terms.max(axis=0)
    weights = np.exp(terms - peak)
    total = weights.sum(axis=0)
    residual = peak + np.log(total) - log_loss
    small = np.abs(residual) <= HUBER_DELTA
    value = np.where(small, 0.5 * residual ** 2, HUBER_DELTA * (np.abs(residual) - 0.5 * HUBER_DELTA)).sum()
    slope = np.where(small, residual, HUBER_DELTA * np.sign(residual))
    share = weights / total                              # d LSE / d term
    gradient = np.array([(slope * share[0]).sum(), (slope * share[1]).sum(), (slope * share[2]).sum(),
                         -(slope * share[0] * log_n).sum(), -(slope * share[1] * log_d).sum()])
    return value, gradient


def _fit_from(starts, log_n, log_d, log_loss) -> tuple[float, np.ndarray]:
    from scipy.optimize import minimize     # here, not at the top: every training rank imports this module (0.5 s)

    best = (math.inf, None)
    for start in starts:
        # Tight tolerances: with delta 1e-3 the Huber gradients are small long before the fit is done.
        found = minimize(_objective, np.asarray(start, dtype=float), args=(log_n, log_d, log_loss), jac=True,
                         method="L-BFGS-B", bounds=[(None, None)] * 3 + [(0.0, 3.0)] * 2,
                         options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 2000})
        if found.fun < best[0]:
            best = (found.fun, found.x)
    return best


def _law(theta: np.ndarray) -> ScalingLaw:
    a, b, e, alpha, beta = theta
    return ScalingLaw(E=float(np.exp(e)), A=float(np.exp(a)), B=float(np.exp(b)), alpha=float(alpha),
                      beta=float(beta))


def fit_law(n_params, tokens, losses) -> ScalingLaw:
    """The best of L-BFGS fits from the START_GRID points where the objective is lowest."""
    log_n, log_d, log_loss = (np.log(np.asarray(values, dtype=float)) for values in (n_params, tokens, losses))
    grid = [(a, b, e, alpha, beta) for alpha, beta, e, a, b in itertools.product(*START_GRID.values())]
    ranked = sorted(grid, key=lambda start: _objective(np.asarray(start), log_n, log_d, log_loss)[0])
    return _law(_fit_from(ranked[:FITTED_STARTS], log_n, log_d, log_loss)[1])


def _theta(law: ScalingLaw) -> tuple:
    """The fit's parameters of `law`. A term fitted away underflows to 0 (losses that never flatten drive e to
    -inf): it starts from the smallest positive float's log instead."""
    return (*(math.log(max(value, sys.float_info.min)) for value in (law.A, law.B, law.E)), law.alpha, law.beta)


def bootstrap_intervals(law: ScalingLaw, n_params, tokens, losses, resamples: int, level: float = 0.95,
                        seed: int = 0) -> dict[str, tuple[float, float]]:
    """Percentile intervals of each parameter over refits of resampled runs (with replacement)."""
    log_n, log_d, log_loss = (np.log(np.asarray(values, dtype=float)) for values in (n_params, tokens, losses))
    rng = np.random.default_rng(seed)
    fits = []
    for _ in range(resamples):
        rows = rng.integers(0, len(log_n), len(log_n))
        fits.append(_law(_fit_from([_theta(law)], log_n[rows], log_d[rows], log_loss[rows])[1]).to_dict())
    tail = (1 - level) / 2 * 100
    return {name: (float(np.percentile([fit[name] for fit in fits], tail)),
                   float(np.percentile([fit[name] for fit in fits], 100 - tail)))
            for name in law.to_dict()}


def holdout_error(n_params, tokens, losses) -> dict:
    """Fit on every run but those of the largest model, predict those: the relative error of each prediction
    and the largest of them."""
    n_params, tokens, losses = (np.asarray(values, dtype=float) for values in (n_params, tokens, losses))
    held = n_params == n_params.max()
    if held.all() or len(np.unique(n_params[~held])) < 2:
        raise ValueError("the hold-out needs runs of at least three model sizes")
    law = fit_law(n_params[~held], tokens[~held], losses[~held])
    predicted = law.loss(n_params[held], tokens[held])
    errors = np.abs(predicted - losses[held]) / losses[held]
    return {"law": law.to_dict(), "held_out_n_params": float(n_params.max()),
            "points": [{"tokens": float(d), "loss": float(actual), "predicted": float(guess)}
                       for d, actual, guess in zip(tokens[held], losses[held], predicted)],
            "max_rel_error": float(errors.max())}
