"""Sizing a run for its lifetime cost (Sardana et al. 2024, "Beyond Chinchilla-optimal"): the N and D that reach
a target loss with the fewest training plus inference FLOPs, 6 N D + 2 N T for T inference tokens, beside the
Chinchilla-optimal pair (training FLOPs only) for the same loss.

On the iso-loss curve of L(N, D), D(N) = (B / (loss - E - A / N^alpha))^(1/beta) for every N large enough that
E + A / N^alpha stays under the target; the total cost is minimised over log N (it is unimodal on that curve).
"""
from __future__ import annotations

import math

from training.scaling_law import ScalingLaw

SEARCH_DECADES = 8          # how far above the smallest model that can reach the loss to look, in powers of 10


def tokens_for_loss(law: ScalingLaw, n_params: float, loss: float) -> float:
    """Training tokens a model of `n_params` needs to reach `loss` (inf when it cannot)."""
    gap = loss - law.E - law.A / n_params ** law.alpha
    return (law.B / gap) ** (1 / law.beta) if gap > 0 else math.inf


def _cheapest(law: ScalingLaw, loss: float, inference_tokens: float) -> dict:
    from scipy.optimize import minimize_scalar     # here: training ranks import this module through training.plan

    if loss <= law.E:
        raise ValueError(f"target loss {loss} is at or under the law's irreducible loss E = {law.E:.4g}")
    smallest = (law.A / (loss - law.E)) ** (1 / law.alpha)       # infinitely many tokens at this size

    def cost(log_n: float) -> float:
        n_params = math.exp(log_n)
        return math.log(6 * n_params * tokens_for_loss(law, n_params, loss) + 2 * n_params * inference_tokens)

    low = math.log(smallest) + 1e-9
    found = minimize_scalar(cost, bounds=(low, low + SEARCH_DECADES * math.log(10)), method="bounded",
                            options={"xatol": 1e-9})
    n_params = math.exp(found.x)
    tokens = tokens_for_loss(law, n_params, loss)
    training, inference = 6 * n_params * tokens, 2 * n_params * inference_tokens
    return {"n_params": n_params, "tokens": tokens, "tokens_per_parameter": tokens / n_params,
            "training_flops": training, "inference_flops": inference, "total_flops": training + inference}


def size_for_lifetime(law: ScalingLaw, loss: float, inference_tokens: float) -> dict:
    """Inference-aware and Chinchilla-optimal (N, D) for `loss`, each with its training, inference and total
    FLOPs when the model then serves `inference_tokens`."""
    chinchilla = _cheapest(law, loss, 0.0)
    chinchilla["inference_flops"] = 2 * chinchilla["n_params"] * inference_tokens
    chinchilla["total_flops"] = chinchilla["training_flops"] + chinchilla["inference_flops"]
    aware = _cheapest(law, loss, inference_tokens)
    return {"loss": loss, "inference_tokens": inference_tokens, "inference_aware": aware,
            "chinchilla_optimal": chinchilla, "saving": 1 - aware["total_flops"] / chinchilla["total_flops"]}
