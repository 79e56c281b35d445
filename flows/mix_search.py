"""The mixture search flow (`sluice mix-search`): from a recipe's domains to a proposed mixture and a matched-token
verdict on it (RegMix, Liu et al. 2024; Data Mixing Laws, Ye et al. 2024; Olmix 2026).

1. Census: the base recipe's data stages (the ablation's: suite, shared tokenizer, documents, decontamination,
   token shards), then each domain's training tokens from the mixture's count pass, at every seed's validation
   split (the least counts): the natural shares, and each domain's cap max_epochs x tokens / budget.
2. Swarm: an ablation at one seed whose variants are the natural mixture and Dirichlet draws around it, one
   source per domain; its runs are the proxies.
3. Fit: the law (`tasks.mixture.mixing_law`) from the weights to each suite metric, with its leave-one-out error.
4. Proposal: the mixture the law predicts best on the target within its trust region (near the natural mixture,
   widened to the swarm's range where the law ranked held-out runs well) and the caps at `target_tokens`.
5. Validation: an ablation of natural, uniform and proposed over the seeds (the natural mixture's first-seed run
   is the swarm's, found again), with its verdict and minimum detectable effect.

MLflow: one parent run (`sluice.kind = mix-search`, found again by the search's settings, so a rerun continues
it and retrains nothing) with the two ablations nested under it, the report, its JSON and the charts.
"""
from __future__ import annotations

import hashlib
import json
import os
import time

import mlflow
import numpy as np
import yaml
from mlflow.entities import Metric
from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from configs.ablation import AblationConfig
from configs.mix_search import MixSearchConfig
from flows.ablation import ablation_flow, budget_figures
from flows.ablation_data import prepare_stages, seeded_draw
from flows.dask_cluster import dask_cluster
from flows.heartbeats import subflows_without_heartbeats
from flows.reporting import artifact_key
from flows.trainer_pool import warm_trainers
from storage.fs import local_path
from tasks.evaluation.compare import Power, seeds_to_resolve
from tasks.mixture.census import source_tokens, token_document_pairs
from tasks.mixture.mixing_law import (FITS, held_out_error, propose, swarm_mixtures, trust_region, weight_caps,
                                      within_caps)
from tasks.mixture.placement import covering_budget
from tasks.mixture.search_report import predicted_vs_measured_png, search_markdown, weights_png
from tracking.parent_run import resumable_parent_run
from tracking.store import run_page_url, use_experiment

RUN_KIND = "mix-search"
CAP_MARGIN = 1e-3         # caps shrink by this share, so a weight rounded into a source never passes its limit
WEIGHT_DIGITS = 6         # a source's weight as written in its recipe


@flow(name="sluice-mix-search", log_prints=True)
def mix_search_flow(search: MixSearchConfig) -> dict:
    """Census, swarm, fit, proposal and validation; returns the report's figures."""
    with subflows_without_heartbeats(), warm_trainers():      # its trainings share torchruns
        return _mix_search(search)


def _mix_search(search: MixSearchConfig) -> dict:
    logger = get_run_logger()
    seq_len, _ = budget_figures(search)
    tracking = use_experiment(search.mlflow.experiment, search.mlflow.tracking_uri)
    base = search.recipe_for("census", {})
    ids = search.domains or list(range(base.domains.topics if search.column == "topic" else base.domains.formats))
    home = f"{local_path(base.store)}/mix-search/{search_key(search)}"
    parent_id = resumable_parent_run(home, search.mlflow.experiment, search.name,
                                     {"sluice.kind": RUN_KIND, "sluice.column": search.column,
                                      "sluice.target": search.target},
                                     search.model_dump(mode="json", exclude={"base", "origin"}),
                                     ("mix_search.yaml", yaml.safe_dump(search.model_dump(mode="json") | {
                                         "base": search.base_recipe()}, sort_keys=False)))
    ranks = search.train.hardware.data_parallel
    proxy_budget = covering_budget(search.tokens, base.mixture.shard_tokens, ranks, seq_len)
    tokens = _census(search, ids, parent_id)
    present = [index for index, count in enumerate(tokens) if count > 0]
    if len(present) < 2:
        raise ValueError(f"{search.column} domains {ids}: {len(present)} hold training tokens; a mixture needs 2")
    if len(present) < len(ids):
        logger.warning("%s domains %s hold no training tokens and are left out", search.column,
                       [ids[index] for index in range(len(ids)) if index not in present])
    ids, tokens = [ids[index] for index in present], np.array([tokens[index] for index in present], np.float64)
    epochs = np.full(len(ids), search.max_epochs)
    natural = tokens / tokens.sum()
    swarm_caps = weight_caps(tokens, epochs, proxy_budget) * (1 - CAP_MARGIN)
    caps = weight_caps(tokens, epochs, max(proxy_budget, search.proposal_tokens)) * (1 - CAP_MARGIN)
    logger.info("mix-search %s: %d %s domains, %s training tokens; natural shares %s", search.name, len(ids),
                search.column, f"{int(tokens.sum()):,}", np.round(natural, 3).tolist())

    drawn = swarm_mixtures(natural, search.swarm.size, search.swarm.concentration, search.swarm.seed, swarm_caps)
    members = {"natural" if index == 0 else f"swarm-{index:02d}": _written(row) for index, row in enumerate(drawn)}
    # no charts of the swarm's own: a dozen curves and bars of unrelated mixtures; the search draws the law's
    swarm = ablation_flow(_ablation(search, "swarm", members, ids, search.seeds[:1]), parent_id, charted=())
    scores = {name: {metric: row["metrics"][metric]["mean"] for metric in swarm["table"]["metrics"]}
              for name, row in swarm["table"]["variants"].items()}
    mixtures = np.array(list(members.values()))
    fit = FITS[search.law]
    errors = {metric: held_out_error(mixtures, [scores[name][metric] for name in members], fit)
              for metric in swarm["table"]["metrics"]}
    measured = np.array([scores[name][search.target] for name in members])
    law = fit(mixtures, measured)
    trusted = search.trust_region
    region = trust_region(natural, caps, mixtures, errors[search.target]["rank_correlation"], trusted.floor,
                          trusted.ceiling, trusted.reliable)
    proposed = _written(propose(law, region.upper, [natural, mixtures[measured.argmin()]], seed=search.swarm.seed,
                                lower=region.lower))
    candidates = {"natural": members["natural"], "uniform": _written(within_caps(np.full(len(ids), 1 / len(ids)),
                                                                                    caps)), "proposed": proposed}
    predicted = {name: float(law.predict(np.array(weights))[0]) for name, weights in candidates.items()}
    logger.info("mix-search %s: proposed %s within %s trust region (predicted %s %.4f against natural %.4f)",
                search.name, np.round(proposed, 3).tolist(), "a widened" if region.widened else "the natural mixture's",
                search.target, predicted["proposed"], predicted["natural"])
    validation = None
    if search.validate_proposal:
        rounds = search.validation_rounds.model_dump() if search.validation_rounds else None
        validation = ablation_flow(_ablation(search, "validation", candidates, ids, search.seeds, rounds), parent_id,
                                   charted=("bpb_vs_tokens", "bpb_by_domain"))     # its mixtures are no steps
    names = [f"{search.column}-{domain}" for domain in ids]
    result = {
        "name": search.name, "column": search.column, "law": search.law, "target": search.target,
        "domains": {"ids": ids, "names": names, "tokens": [int(count) for count in tokens],
                    "natural": natural.tolist(), "caps": caps.tolist()},
        "trust_region": {"lower": region.lower.tolist(), "upper": region.upper.tolist(), "widened": region.widened}
        | trusted.model_dump(),
        "swarm": {"size": len(members), "tokens": search.tokens, "seed": search.seeds[0],
                  "concentration": search.swarm.concentration, "mlflow_run_id": swarm["mlflow_run_id"],
                  "members": [{"name": name, "weights": list(weights), "measured": scores[name],
                               "predicted": errors[search.target]["predicted"][index]}
                              for index, (name, weights) in enumerate(members.items())]},
        "fit": {metric: {key: value for key, value in error.items() if key != "predicted"}
                for metric, error in errors.items()},
        "mixtures": candidates, "predicted": predicted, "proposal_tokens": search.proposal_tokens,
        "predicted_gain": predicted["natural"] - predicted["proposed"],
        "validation": _validation_figures(validation, search.target, predicted["natural"] - predicted["proposed"])
        if validation else None}
    result |= _publish(search, result, parent_id, tracking, f"{home}/report")
    run = mlflow.get_run(parent_id)
    return result | {"mlflow_run_id": parent_id, "mlflow_tracking_uri": tracking,
                     "mlflow_run_page": run_page_url(tracking, run.info.experiment_id, parent_id)}


def search_key(search: MixSearchConfig) -> str:
    """The search's identity: its settings and its base recipe's content, wherever the file was."""
    body = search.model_dump(mode="json", exclude={"origin"}) | {"base": search.base_recipe()}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def domain_sources(column: str, ids: list[int], weights: list[float]) -> list[dict]:
    """One mixture source per domain of positive weight."""
    return [{"name": f"{column}-{domain}", "where": {column: [domain]}, "weight": weight}
            for domain, weight in zip(ids, weights) if weight > 0]


def _written(weights: np.ndarray) -> list[float]:
    """The weights as a recipe holds them: rounded, renormalised, the ones rounded away left out (zero)."""
    rounded = np.round(np.asarray(weights, np.float64), WEIGHT_DIGITS)
    return np.round(rounded / rounded.sum(), WEIGHT_DIGITS).tolist()


def _ablation(search: MixSearchConfig, part: str, mixtures: dict[str, list[float]], ids: list[int],
              seeds: list[int], seed_rounds: dict | None = None) -> AblationConfig:
    """An ablation of the search's runs whose variants are `mixtures` (name -> weights per domain); the last one is
    its headline comparison against natural (what `seed_rounds` add seeds for)."""
    shared = search.model_dump(exclude={"column", "domains", "swarm", "law", "target", "target_tokens",
                                        "trust_region", "validation_rounds", "validate_proposal"})
    variants = {name: {"mixture": {"sources": domain_sources(search.column, ids, weights)}}
                for name, weights in mixtures.items()}
    return AblationConfig.model_validate(shared | {"name": f"{search.name}-{part}", "variants": variants,
                                                   "baseline": "natural", "seeds": seeds,
                                                   "seed_rounds": seed_rounds})


def _census(search: MixSearchConfig, ids: list[int], parent_id: str) -> list[int]:
    """Each domain's training tokens: the least over the seeds' validation splits."""
    recipe = search.recipe_for("census", {"mixture": {"sources": domain_sources(search.column, ids, [1] * len(ids))}})
    recipe = recipe.model_copy(update={"store": local_path(recipe.store)})
    with dask_cluster(recipe.dask):
        data = prepare_stages(search, {"census": recipe}, recipe, parent_id)
    pairs = token_document_pairs(data["variants"]["census"]["stages"]["tokenize"])
    counts = [source_tokens(pairs, recipe.mixture.model_copy(update=seeded_draw(recipe.mixture, search.seed_controls,
                                                                                seed)))
              for seed in search.seeds]
    return [min(column) for column in zip(*counts)]


def _validation_figures(validation: dict, target: str, predicted_gain: float) -> dict:
    """The validation's verdicts, per metric means and proposed - natural with its detectable effect, and how many
    seeds would resolve the gain the law predicted at the validation's paired noise (None: beyond any count
    considered, or no noise to weigh it against)."""
    table = validation["table"]
    versus = table["variants"]["proposed"]["vs_baseline"][target]
    paired = versus["paired_std"]
    return {"mlflow_run_id": validation["mlflow_run_id"], "verdict": table["verdict"], "verdicts": table["verdicts"],
            "seeds": table["variants"]["natural"]["seeds"],
            "bpb": {name: {metric: cell["mean"] for metric, cell in row["metrics"].items()}
                    for name, row in table["variants"].items()},
            "difference_proposed_minus_natural": versus["difference"], "p_value": versus["p_value"],
            "realized_gain": -versus["difference"],
            "seeds_to_resolve_predicted_gain": seeds_to_resolve(predicted_gain, paired, Power(**table["power"]))
            if paired else None,
            "called": versus["called"], "minimum_detectable_effect": versus["mde"]}


def _publish(search: MixSearchConfig, result: dict, parent_id: str, tracking: str, folder: str) -> dict:
    """The report and charts on the parent run and as Prefect artifacts; the headline figures as its metrics."""
    os.makedirs(folder, exist_ok=True)
    target = result["target"]
    charts = [predicted_vs_measured_png([member["measured"][target] for member in result["swarm"]["members"]],
                                        [member["predicted"] for member in result["swarm"]["members"]], target,
                                        os.path.join(folder, "predicted_vs_measured.png")),
              weights_png(result["domains"]["names"], result["mixtures"], os.path.join(folder, "weights.png"))]
    markdown = search_markdown(result)
    client = mlflow.MlflowClient()
    client.log_text(parent_id, json.dumps(result, indent=2), "mix_search.json")
    client.log_text(parent_id, markdown, "mix_search.md")
    client.set_tag(parent_id, "mlflow.note.content", markdown)
    for path in charts:
        client.log_artifact(parent_id, path, "charts")
    figures = {"fit_rank_correlation_heldout": result["fit"][target]["rank_correlation"],
               "fit_mae_heldout": result["fit"][target]["mean_absolute_error"],
               **{f"predicted/{name}": value for name, value in result["predicted"].items()}}
    if result["validation"]:
        figures |= {"difference_proposed_minus_natural": result["validation"]["difference_proposed_minus_natural"],
                    "minimum_detectable_effect": result["validation"]["minimum_detectable_effect"]}
        client.set_tag(parent_id, "sluice.verdict", result["validation"]["verdict"][:5000])
    now = int(time.time() * 1000)
    client.log_batch(parent_id, metrics=[Metric(key, float(value), now, 0) for key, value in figures.items()
                                         if value is not None and np.isfinite(value)])
    create_markdown_artifact(key=f"{artifact_key(search.name)}-mix-search", markdown=markdown,
                             description=f"mixture search {search.name}: the proposed mixture and its verdict")
    return {"charts": charts, "markdown": markdown}
