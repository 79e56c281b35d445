"""The training subcommands: `plan`, `train`, `ablate`, `sweep`, `mix-search`, `scaling fit`."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable


def plan(args) -> int:
    from configs.parsing import RecipeError
    from configs.schema import load_training_plan_input
    from training.plan import PlanRefused, check_fits, plan, plan_text
    from training.scaling_law import CHINCHILLA, ScalingLaw

    try:
        config = load_training_plan_input(args.config)
    except RecipeError as error:
        print(error, file=sys.stderr)
        return 2
    try:
        law = ScalingLaw.load(args.law) if args.law else CHINCHILLA
        figures = plan(config, args.inference_tokens, law, args.target_loss)
    except (OSError, ValueError) as error:
        print(f"{args.config}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(figures, indent=2) if args.json else plan_text(figures))
    try:
        check_fits(figures)
    except PlanRefused as error:
        print(f"refused: {error}", file=sys.stderr)
        return 3
    return 0


def train(args) -> int:
    from configs.training import load_training_config
    from flows.training_flow import training_flow
    from services.temporary_server import wait_for_prefect

    config = load_training_config(args.config)
    if not config.data.train:
        print(f"{args.config}: data.train lists no token shards", file=sys.stderr)
        return 2
    wait_for_prefect()
    print(json.dumps(training_flow(config), indent=2))
    return 0


def ablation_with_flags(ablation, args):
    """The ablation file with what `sluice ablate`'s flags set over it, validated again."""
    from configs.ablation import parse_ablation

    overrides = {"reuse_older_runs": True} if args.reuse_older_runs else {}
    if args.variance_split:
        overrides["variance_split"] = True
    if args.seed_rounds:
        overrides["seed_rounds"] = {"max": args.seed_rounds}
    if not overrides:
        return ablation
    return parse_ablation(ablation.model_dump(mode="json") | overrides, origin=str(args.ablation))


def ablate(args) -> int:
    from configs.ablation import load_ablation
    from flows.ablation import ablation_flow

    return matched_runs(lambda: ablation_with_flags(load_ablation(args.ablation), args), ablation_flow,
                         "; `sluice compare {run}` prints the table again")


def matched_runs(load: Callable, run_flow: Callable, again: str = "") -> int:
    """An ablation or a mixture search: the file and its token budget checked before anything starts, then the
    flow, its report and where MLflow holds it (`again`: what else to say, `{run}` the parent run)."""
    from configs.parsing import RecipeError
    from flows.ablation import budget_figures
    from services.temporary_server import wait_for_prefect

    try:
        config = load()
        budget_figures(config)
    except RecipeError as error:
        print(error, file=sys.stderr)
        return 2
    wait_for_prefect()
    result = run_flow(config)
    print()
    print(result["markdown"])
    print()
    print(f"charts:      {', '.join(result['charts'])}")
    print(f"MLflow run:  {result['mlflow_run_id']} (tracking {result['mlflow_tracking_uri']})"
          + again.format(run=result["mlflow_run_id"]))
    return 0


def sweep(args) -> int:
    from configs.parsing import RecipeError
    from configs.sweep import load_sweep
    from flows.scaling_fit import fit_text
    from flows.sweep import sweep_flow
    from services.temporary_server import wait_for_prefect

    try:
        sweep = load_sweep(args.sweep)
    except RecipeError as error:
        print(error, file=sys.stderr)
        return 2
    wait_for_prefect()
    result = sweep_flow(sweep)
    print()
    for run in result["runs"]:
        print(f"  {run['n_params'] / 1e6:8.3f}M parameters  {run['tokens']:>10,} tokens  lr {run['lr']:<8g} "
              f"val_loss {run.get('val_loss', float('nan')):.4f}")
    print()
    print(fit_text(result["fit"]) if result["fit"] else "no fit: the ladder needs 5 points over 2 sizes and 2 budgets")
    print(f"MLflow run:  {result['mlflow_run_id']} (tracking {result['mlflow_tracking_uri']}); "
          f"`sluice scaling fit {result['mlflow_run_id']}` fits it again")
    return 0


def mix_search(args) -> int:
    from configs.mix_search import load_mix_search
    from flows.mix_search import mix_search_flow

    return matched_runs(lambda: load_mix_search(args.search), mix_search_flow)


def scaling_fit(args) -> int:
    import mlflow

    from flows.scaling_fit import fit_text, scaling_fit_flow
    from services.temporary_server import wait_for_prefect

    wait_for_prefect()
    try:
        result = scaling_fit_flow(args.run_id, flops=args.flops, metric=args.metric, resamples=args.resamples)
    except (ValueError, mlflow.exceptions.MlflowException) as error:
        print(f"sluice scaling fit {args.run_id}: {error}", file=sys.stderr)
        return 2
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2) if args.json else fit_text(result))
    return 0
