"""`sluice run` and `sluice validate`: the recipe with the command line's overrides, checked against this machine,
then the curation flow and its summary, one line per stage."""
from __future__ import annotations

import json


def checked_recipe(args):
    """The recipe with the command line's overrides, checked against this machine (flows.preflight)."""
    from configs.schema import load_recipe, parse_recipe
    from flows.preflight import preflight

    raw = load_recipe(args.recipe).model_dump()
    if args.command == "run":
        raw["dask"]["address"] = args.dask_address or raw["dask"]["address"]
        raw["dask"]["n_workers"] = args.workers or raw["dask"]["n_workers"]
        raw["store"] = args.store or raw["store"]
    recipe = parse_recipe(raw, origin=f"{args.recipe} (with command-line options)")
    preflight(recipe, str(args.recipe))
    return recipe


def stage_outcome(name: str, stats: dict) -> str:
    """What a stage made, in its own terms: documents for the document stages, models for the others."""
    if name == "quality_models":
        return "quality models trained"
    if name == "tokenizer":
        from storage.stage_figures import TokenizerFigures

        return f"{TokenizerFigures.from_stats(stats).vocab_size} pieces from {stats['documents_out']} sample documents"
    if name == "mixture":
        return f"{stats['documents_out']} documents drawn"
    read = f"from {stats['records_read']} records" if stats["records_read"] else f"of {stats['candidates']}"
    return f"{stats['documents_out']} documents {read}"


def figure(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def run_recipe(recipe) -> int:
    from flows.curation import curation_flow
    from services.temporary_server import wait_for_prefect
    from storage.stage_result import stage_folder

    wait_for_prefect()
    result = curation_flow(recipe)
    print()
    print(f"recipe {result['recipe']}:")
    for name, stage in result["stages"].items():
        stats = stage["stats"]
        done = "cached" if stage["cached"] else f"computed in {stats.get('wall_seconds', 0):.1f} s" + (
            f", {stats['orchestration_share']:.0%} of it orchestration" if "orchestration_share" in stats else "")
        print(f"  {name}: {stage_outcome(name, stats)} ({done})")
        print(f"    output:          {stage_folder(stage)}/")
        if stats["drops"]:
            print(f"    drops:           {json.dumps(stats['drops'])}")
        if stats["problems"]:
            print(f"    problems:        {json.dumps(stats['problems'])}")
    if result["training"]:
        training = result["training"]
        print(f"  train: step {training.get('step')}, loss {figure(training.get('loss'))}, validation loss "
              f"{figure(training.get('val_loss'))} ({figure(training.get('val_bpb'))} bits per byte)")
        print(f"    checkpoints:     {training['checkpoint_dir']}")
        print(f"    MLflow run:      {training['mlflow_run_id']}")
        if training.get("model_uri"):
            print(f"    model:           {training['model_uri']} (`sluice sample {training['model_uri']} \"The\"`)")
    print(f"  Dask scheduler {result['dask_scheduler']} ran the stages" if result["dask_scheduler"] else
          "  Dask:            no cluster started (every stage was in the store)")
    print(f"  MLflow run:      {result['mlflow_run_id']} (experiment {result['experiment']!r}, "
          f"tracking {result['mlflow_tracking_uri']})")
    browse = result.get("mlflow_run_page") or f"mlflow ui --backend-store-uri {result['mlflow_tracking_uri']}"
    print(f"  browse it:       {browse}")
    return 0
