"""`sluice scaling fit PARENT_RUN_ID`: L(N, D) fitted to a sweep's final validation losses (training.scaling_law),
with bootstrap intervals, the hold-out error on the largest model, the compute-optimal N and D for a budget, and
charts, logged to the sweep's MLflow run (`scaling/`) and as Prefect artifacts.

Each (N, D) counts once: with a learning-rate sweep, its best run (lowest loss) is the point.
"""
from __future__ import annotations

import json
import os
import tempfile
import time

import mlflow
from mlflow.exceptions import MlflowException
from prefect import flow, get_run_logger
from prefect.artifacts import create_image_artifact, create_markdown_artifact

from flows.reporting import artifact_key
from storage.code_version import code_version
from tracking.run_members import members
from tracking.store import artifact_url, tracking_uri
from training.scaling_charts import scaling_png
from configs.sweep import BOOTSTRAP_RESAMPLES
from training.scaling_law import bootstrap_intervals, fit_law, holdout_error

MIN_POINTS = 5            # the law has five parameters
BUDGET_OVER_LARGEST_RUN = 10     # default compute budget for N*(C), D*(C): ten times the ladder's largest run
RUN_KIND = "sweep-run"         # a sweep point's training run
IDENTIFIED_E_SHARE = 0.1         # an E under a tenth of every measured loss is not pinned down by them
IDENTIFIED_SPREAD = 10.0         # nor an exponent whose interval spans more than this factor


def can_fit(runs: list[dict]) -> bool:
    """Enough distinct (N, D) points, over at least two sizes and two budgets, to pin five parameters."""
    shapes = {(run["n_params"], run["tokens"]) for run in runs}
    return (len(shapes) >= MIN_POINTS and len({n for n, _ in shapes}) >= 2 and len({d for _, d in shapes}) >= 2)


def point_role(n_params: int, tokens: int, lr: float, shape: dict | None = None) -> dict:
    """A sweep point's role in its sweep (`tracking.run_members`): a run trained again for it replaces the old.
    `shape` (layers, width, heads) keeps apart two models of one size, such as an aspect-ratio pair: the fit takes
    the better of them."""
    return {"n_params": n_params, "tokens": tokens, "lr": lr} | ({"shape": shape} if shape else {})


def ladder_points(parent_run_id: str, metric: str = "val_loss") -> list[dict]:
    """The sweep's finished runs as (n_params, tokens, lr, loss, run_id); the best run of each (N, D). A run
    another sweep trained counts where this sweep joined it."""
    best: dict[tuple[int, int], dict] = {}
    for run, _ in members(parent_run_id):
        if run.info.status != "FINISHED" or metric not in run.data.metrics:
            continue
        point = {"n_params": int(run.data.tags["sluice.n_params"]), "tokens": int(run.data.tags["sluice.tokens"]),
                 "lr": float(run.data.tags["sluice.lr"]), "loss": run.data.metrics[metric], "run_id": run.info.run_id}
        key = (point["n_params"], point["tokens"])
        if key not in best or point["loss"] < best[key]["loss"]:
            best[key] = point
    return sorted(best.values(), key=lambda point: (point["n_params"], point["tokens"]))


@flow(name="sluice-scaling-fit", log_prints=True)
def scaling_fit_flow(parent_run_id: str, tracking: str | None = None, flops: float | None = None,
                     metric: str = "val_loss", resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """Fit L(N, D) to the sweep under `parent_run_id`; returns the law, its intervals, the hold-out error and
    the compute-optimal sizes at `flops` (default ten times the largest run's 6 N D)."""
    logger = get_run_logger()
    uri = tracking_uri(tracking)
    mlflow.set_tracking_uri(uri)
    points = ladder_points(parent_run_id, metric)
    if not can_fit(points):
        raise ValueError(f"run {parent_run_id}: {len(points)} finished (N, D) points with {metric}; a fit needs "
                         f"{MIN_POINTS} or more over at least two model sizes and two token budgets")
    n_params, tokens, losses = ([point[key] for point in points] for key in ("n_params", "tokens", "loss"))
    budget = flops or BUDGET_OVER_LARGEST_RUN * max(6 * n * d for n, d in zip(n_params, tokens))
    fitted_from = {"metric": metric, "points": points, "resamples": resamples, "flops": budget,
                   "code_version": code_version("training.scaling_law")}
    if (logged := _logged_fit(parent_run_id, fitted_from)) is not None:
        logger.info("L(N, D): run %s holds the fit of these points, settings and code already; not refitted",
                    parent_run_id)
        return logged
    law = fit_law(n_params, tokens, losses)
    result = {"parent_run_id": parent_run_id, **fitted_from, "law": law.to_dict(),
              "intervals": bootstrap_intervals(law, n_params, tokens, losses, resamples),
              "holdout": holdout_error(n_params, tokens, losses) if len(set(n_params)) >= 3 else None,
              "compute_optimal": law.compute_optimal(budget)}
    result["warnings"] = fit_warnings(result)
    logger.info("L(N, D) = %.4g + %.4g / N^%.3f + %.4g / D^%.3f over %d points; hold-out error %s", law.E, law.A,
                law.alpha, law.B, law.beta, len(points),
                f"{result['holdout']['max_rel_error']:.2%}" if result["holdout"] else "n/a (fewer than 3 sizes)")
    _publish(result, uri)
    return result


def _logged_fit(parent_run_id: str, fitted_from: dict) -> dict | None:
    """The fit logged on the sweep's run, if it was made `fitted_from` the same points, settings and fitting code:
    the fit is seeded, so fitting again would give it again (a rerun of a finished sweep fits nothing)."""
    try:
        logged = json.loads(mlflow.artifacts.load_text(f"runs:/{parent_run_id}/scaling/law.json"))
    except MlflowException:
        return None
    return logged if {key: logged.get(key) for key in fitted_from} == fitted_from else None


def fit_warnings(result: dict) -> list[str]:
    """What the points do not pin down: an irreducible loss far under every measured loss (the ladder is still on
    the steep part of its curves), or an exponent whose 95% interval spans more than a factor of 10."""
    law, intervals = result["law"], result["intervals"]
    lowest = min(point["loss"] for point in result["points"])
    warnings = []
    if law["E"] < IDENTIFIED_E_SHARE * lowest:
        warnings.append(f"E went to {law['E']:.3g}, far under the lowest loss measured ({lowest:.3f}): the ladder's "
                        f"losses are all far above the irreducible loss, so E is not identified, and N*(C) and D*(C) "
                        f"extrapolate nothing; train the ladder longer")
    for name in ("alpha", "beta"):
        low, high = intervals[name]
        if low <= 0 or high / low > IDENTIFIED_SPREAD:
            warnings.append(f"{name}'s 95% interval is {low:.3g} to {high:.3g}: not identified by these points")
    return warnings


def fit_text(result: dict) -> str:
    """The fit as a person reads it (also the Prefect artifact's body)."""
    law, intervals = result["law"], result["intervals"]
    lines = [f"L(N, D) = E + A / N^alpha + B / D^beta, fitted to {len(result['points'])} runs' final "
             f"{result['metric']} (Chinchilla approach 3: Huber on log L, L-BFGS from a grid, 95% bootstrap intervals)",
             "", "| parameter | value | 95% interval |", "|---|---|---|"]
    lines += [f"| {name} | {law[name]:.4g} | {intervals[name][0]:.4g} - {intervals[name][1]:.4g} |" for name in law]
    held = result["holdout"]
    if held:
        lines += ["", f"Hold-out: fitted without the largest model ({held['held_out_n_params'] / 1e6:.2f}M parameters),"
                      f" its losses are predicted within {held['max_rel_error']:.2%} (largest relative error)."]
    lines += [""] + [f"**Warning:** {warning}." for warning in result["warnings"]]
    best = result["compute_optimal"]
    lines += ["", f"Compute-optimal at {best['flops']:.3g} FLOPs (C = 6ND): N* = {best['n_params'] / 1e6:.3g}M "
                  f"parameters, D* = {best['tokens']:.3g} tokens ({best['tokens_per_parameter']:.1f} tokens per "
                  f"parameter), predicted loss {best['loss']:.4f}."]
    return "\n".join(lines)


def _publish(result: dict, uri: str) -> None:
    parent = result["parent_run_id"]
    client = mlflow.MlflowClient()
    text = fit_text(result)
    with tempfile.TemporaryDirectory() as folder:
        chart = scaling_png(result, os.path.join(folder, "scaling_law.png"))
        client.log_artifact(parent, chart, "scaling")
    client.log_text(parent, json.dumps(result, indent=2), "scaling/law.json")
    client.log_text(parent, text, "scaling/fit.md")
    now = int(time.time() * 1000)
    client.log_batch(parent, metrics=[mlflow.entities.Metric(f"scaling.{name}", value, now, 0)
                                      for name, value in result["law"].items()])
    key = artifact_key(f"scaling-{parent}")
    url = artifact_url(uri, parent, "scaling/scaling_law.png")
    if url:
        create_image_artifact(image_url=url, key=f"{key}-chart")
    create_markdown_artifact(key=key, markdown=text + "\n\n" + (f"![scaling law]({url})" if url else
                                                                f"Chart: `scaling/scaling_law.png` in MLflow run {parent}"),
                             description="L(N, D) fitted to a sweep")
