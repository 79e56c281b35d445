"""The `sluice` command: run a recipe, build the demo corpus, validate a recipe, plan and run training, run and
compare ablations, learn a data mixture (`sluice mix-search`), sweep model sizes and fit a scaling law, sample,
export or evaluate (lm-evaluation-harness) a trained model, say what became of a document (`sluice why`), export token shards for Megatron, start the
long-running services (`sluice server`), and make a multi-host cluster's certificates and credentials
(`sluice secrets`)."""
from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Callable
from pathlib import Path

from flows.environment import apply_cli_defaults
from configs.sweep import BOOTSTRAP_RESAMPLES

QUIET_COMMANDS = ("run", "train", "ablate", "sweep", "mix-search")   # a progress display and a summary; the full log to a file
FLOW_COMMANDS = QUIET_COMMANDS + ("scaling",)         # they call flows: a Prefect API is needed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sluice", description="Data-centric LLM pretraining pipeline")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show every log line live (default for run, train, ablate: progress and warnings; "
                             "the full log goes to a file under the state dir)")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a recipe end to end")
    run.add_argument("recipe", type=Path)
    run.add_argument("--dask-address", help="tcp://host:port of an existing Dask scheduler (tls://host:port: "
                                             "with the DASK_DISTRIBUTED__COMM__TLS__* certificates set)")
    run.add_argument("--workers", type=int, help="LocalCluster worker processes (default: recipe or cores)")
    run.add_argument("--store", help="override the recipe's stage store")

    validate = commands.add_parser("validate", help="check a recipe without running anything")
    validate.add_argument("recipe", type=Path)

    corpus = commands.add_parser("corpus", help="build the seeded Common-Crawl-style WARC corpus")
    corpus.add_argument("--size", default="small", help="small (tests, demo) or bench (benchmarks)")
    corpus.add_argument("--seed", type=int, default=0)
    corpus.add_argument("--out", type=Path, required=True)
    corpus.add_argument("--data-dir", type=Path, help="shared data (default SLUICE_DATA_DIR or ../shared/data)")

    plan = commands.add_parser("plan", help="review a training file or a recipe's train section before launch: "
                                            "memory, FLOPs, time")
    plan.add_argument("config", type=Path)
    plan.add_argument("--json", action="store_true", help="print the figures as JSON")
    plan.add_argument("--inference-tokens", type=float,
                      help="tokens the model will serve: size it for training plus inference FLOPs")
    plan.add_argument("--target-loss", type=float, help="loss to reach (default: the law's loss for this config)")
    plan.add_argument("--law", type=Path, help="a fitted scaling law (JSON from `sluice scaling fit`; "
                                               "default Chinchilla's)")

    train = commands.add_parser("train", help="train on token shards as a Prefect flow (torchrun underneath)")
    train.add_argument("config", type=Path, help="a training config with data.train set")

    ablate = commands.add_parser("ablate", help="train one model on several data recipes and seeds, compare them")
    ablate.add_argument("ablation", type=Path, help="an ablation file (configs/ablation.yaml)")
    ablate.add_argument("--reuse-older-runs", action="store_true", help=(
        "keep runs trained by an earlier version of the trainer's code (marked in the table) instead of retraining"))
    ablate.add_argument("--variance-split", action="store_true", help=(
        "also train the baseline with each seed control varied alone: which part of the seed noise each holds"))
    ablate.add_argument("--seed-rounds", type=int, metavar="MAX", help=(
        "add 2 seeds per round until the headline verdict is called or MAX seeds have run (alpha spent over the "
        "looks; the file's `seed_rounds`)"))

    sweep = commands.add_parser("sweep", help="train a ladder of model sizes x token budgets (x learning rates) on "
                                              "one token dataset, then fit L(N, D)")
    sweep.add_argument("sweep", type=Path, help="a sweep file (configs/ladder.yaml)")

    search = commands.add_parser("mix-search", help="learn a data mixture over the domain stage's domains: a swarm "
                                                     "of proxy runs, a fitted mixing law, a proposal, its ablation")
    search.add_argument("search", type=Path, help="a mixture search file (configs/mix_search.yaml)")

    scaling = commands.add_parser("scaling", help="scaling laws over a finished sweep")
    scaling_commands = scaling.add_subparsers(dest="scaling_command", required=True)
    fit = scaling_commands.add_parser("fit", help="fit L(N, D) = E + A/N^alpha + B/D^beta to a sweep's final losses")
    fit.add_argument("run_id", help="the sweep's parent MLflow run id")
    fit.add_argument("--flops", type=float, help="compute budget for N* and D* (default: 10x the largest run)")
    fit.add_argument("--metric", default="val_loss", help="the final metric fitted (default val_loss)")
    fit.add_argument("--resamples", type=int, default=BOOTSTRAP_RESAMPLES,
                     help=f"bootstrap refits for the intervals (default {BOOTSTRAP_RESAMPLES})")
    fit.add_argument("--out", type=Path, help="also write the fit as JSON here (`sluice plan --law` reads it)")
    fit.add_argument("--json", action="store_true", help="print the whole fit as JSON")

    doctor = commands.add_parser("doctor", help="check a tracked training run for spikes, bad resumes, leakage, "
                                                "slow steps, schedule and batch problems")
    doctor.add_argument("run_id", help="the training run's MLflow run id")
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")

    compare = commands.add_parser("compare", help="print a finished ablation's comparison from MLflow")
    compare.add_argument("run_id", help="the ablation's parent MLflow run id")
    compare.add_argument("--json", action="store_true", help="print the whole comparison as JSON")

    commands.add_parser("recipe-reference", help="print every config field (type, default, description) as markdown")

    sample = commands.add_parser("sample", help="continue prompts with a trained model logged in MLflow")
    sample.add_argument("model_uri", help="models:/<model id> (printed by `sluice train`, `run`, `ablate`)")
    sample.add_argument("prompts", nargs="+")
    sample.add_argument("--new-tokens", type=int, default=32)
    sample.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    sample.add_argument("--seed", type=int, default=0)

    export = commands.add_parser("export", help="write a trained model as a Hugging Face checkpoint (Qwen3 "
                                                "architecture, fast tokenizer) that transformers loads")
    export.add_argument("model_uri", help="models:/<model id> (printed by `sluice train`, `run`, `ablate`) or a "
                                          "registered models:/<name>/<version>")
    export.add_argument("out_dir", type=Path)

    evaluate = commands.add_parser("eval", help="run lm-evaluation-harness tasks on a trained model's Hugging Face "
                                                "export; log their metrics to the model's MLflow run")
    evaluate.add_argument("model_uri", help="models:/<model id> (printed by `sluice train`, `run`, `ablate`) or a "
                                            "registered models:/<name>/<version>")
    evaluate.add_argument("--tasks", required=True,
                          help="comma-separated: sluice_lastword (local, offline) and/or lm-eval's own tasks, e.g. "
                               "hellaswag,arc_easy,piqa (their data comes from the Hugging Face Hub)")
    evaluate.add_argument("--limit", type=_count_or_fraction,
                          help="score only the first N items of each task (a fraction below 1: that share)")
    evaluate.add_argument("--batch-size", type=int, default=8)
    evaluate.add_argument("--num-fewshot", type=int, help="few-shot examples (default: each task's own, else 0)")
    evaluate.add_argument("--device", help="torch device (default: cuda when there is a GPU, else cpu)")

    megatron = commands.add_parser("export-megatron", help="write a tokenize or mixture stage's token shards as "
                                                          "Megatron indexed datasets (.bin/.idx)")
    megatron.add_argument("manifest", help="the stage's manifest.json (printed by `sluice run`, in its stage folder)")
    megatron.add_argument("out_dir", type=Path)

    why = commands.add_parser("why", help="what became of a document in a curation run: kept, or which stage "
                                          "dropped it and why (with the duplicate kept)")
    why.add_argument("document", help="the document's id or URL (a URL follows every capture of it)")
    why.add_argument("--run", help="the curation run's MLflow run id (default: the newest curation run)")
    why.add_argument("--json", action="store_true", help="print the fates as JSON")

    server = commands.add_parser("server", help="start Prefect, MLflow, optionally Dask, and serve the deployments")
    server.add_argument("--host", default="127.0.0.1", help="where every service listens: loopback, unless "
                                                           "--multi-host (then this machine's address for the others)")
    server.add_argument("--multi-host", action="store_true", help=(
        "listen for other machines, each service behind its own authentication: Prefect's auth string and MLflow's "
        "basic auth (PREFECT_API_AUTH_STRING, MLFLOW_TRACKING_USERNAME, MLFLOW_TRACKING_PASSWORD from the "
        "environment), Dask's TLS (--certs)"))
    server.add_argument("--certs", type=Path, help="with --multi-host and --dask-workers: the folder of Dask TLS "
                                                   "certificates that `sluice secrets` made")
    server.add_argument("--prefect-port", type=int, default=4200)
    server.add_argument("--mlflow-port", type=int, default=5000)
    server.add_argument("--dask-workers", type=int, default=0, help="start a Dask scheduler and N worker processes")
    server.add_argument("--dask-port", type=int, default=8786)
    server.add_argument("--dask-dashboard-port", type=int, default=8787)
    server.add_argument("--deployments", default="configs/deployments.yaml",
                        help="the deployments file to serve ('' serves none)")
    server.add_argument("--backend-store-uri", help="MLflow's backend store (default: SQLite in the state dir)")

    made = commands.add_parser("secrets", help="make a multi-host cluster's Dask TLS certificates (a CA, the "
                                               "scheduler's, the nodes') and its Prefect and MLflow credentials")
    made.add_argument("folder", type=Path)
    made.add_argument("--days", type=int, default=365, help="how long the certificates are valid (default 365)")

    args = parser.parse_args(argv)
    quiet = args.command in QUIET_COMMANDS and not args.verbose
    apply_cli_defaults(quiet=quiet)  # before Prefect / MLflow load
    if args.command in ("run", "validate"):
        from configs.parsing import RecipeError

        try:
            recipe = _checked_recipe(args)            # before any service starts
        except RecipeError as error:
            print(error, file=sys.stderr)
            return 2
        if args.command == "validate":
            print(f"{args.recipe}: valid recipe {recipe.name!r}, and this machine can run it")
            return 0
    if args.command in FLOW_COMMANDS:
        from flows.temporary_server import start_temporary_server

        start_temporary_server()     # comes up while the flows are imported
    log = None
    if quiet:
        from flows.console import leave_failures_to_the_report, log_to_file
        from storage.locations import state_dir

        log = log_to_file(state_dir() / "logs", args.command)
        leave_failures_to_the_report()
        print(f"full log: {log} (-v shows it live)", file=sys.stderr)
    if args.command not in QUIET_COMMANDS:
        return _command(args, None)
    try:
        return _command(args, recipe if args.command == "run" else None)
    except Exception as error:         # a failed run: a few lines, the traceback in the log (and live with -v)
        from flows.failure_report import report_failure

        return report_failure(error, f"sluice {args.command}", log)


def _command(args, recipe) -> int:
    if args.command == "server":
        return _server(args)
    if args.command == "secrets":
        return _secrets(args)
    if args.command == "corpus":
        return _corpus(args)
    if args.command == "plan":
        return _plan(args)
    if args.command == "train":
        return _train(args)
    if args.command == "ablate":
        return _ablate(args)
    if args.command == "sweep":
        return _sweep(args)
    if args.command == "mix-search":
        return _mix_search(args)
    if args.command == "scaling":
        return _scaling_fit(args)
    if args.command == "compare":
        return _compare(args)
    if args.command == "doctor":
        return _doctor(args)
    if args.command == "sample":
        return _sample(args)
    if args.command == "why":
        return _why(args)
    if args.command == "export":
        return _export(args)
    if args.command == "eval":
        return _eval(args)
    if args.command == "export-megatron":
        return _export_megatron(args)
    if args.command == "recipe-reference":
        from configs.reference import reference_markdown

        print(reference_markdown(), end="")
        return 0
    return _run(recipe)


def _checked_recipe(args):
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


def _stage_outcome(name: str, stats: dict) -> str:
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


def _figure(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _run(recipe) -> int:
    from flows.curation import curation_flow
    from flows.temporary_server import wait_for_prefect
    from storage.stage_result import stage_folder

    wait_for_prefect()
    result = curation_flow(recipe)
    print()
    print(f"recipe {result['recipe']}:")
    for name, stage in result["stages"].items():
        stats = stage["stats"]
        done = "cached" if stage["cached"] else f"computed in {stats.get('wall_seconds', 0):.1f} s" + (
            f", {stats['orchestration_share']:.0%} of it orchestration" if "orchestration_share" in stats else "")
        print(f"  {name}: {_stage_outcome(name, stats)} ({done})")
        print(f"    output:          {stage_folder(stage)}/")
        if stats["drops"]:
            print(f"    drops:           {json.dumps(stats['drops'])}")
        if stats["problems"]:
            print(f"    problems:        {json.dumps(stats['problems'])}")
    if result["training"]:
        training = result["training"]
        print(f"  train: step {training.get('step')}, loss {_figure(training.get('loss'))}, validation loss "
              f"{_figure(training.get('val_loss'))} ({_figure(training.get('val_bpb'))} bits per byte)")
        print(f"    checkpoints:     {training['checkpoint_dir']}")
        print(f"    MLflow run:      {training['mlflow_run_id']}")
        if training.get("model_uri"):
            print(f"    model:           {training['model_uri']} (`sluice sample {training['model_uri']} \"The\"`)")
    print(f"  Dask scheduler {result['dask_scheduler']} ran the stages" if result["dask_scheduler"] else
          "  Dask:            no cluster started (every stage was in the store)")
    print(f"  MLflow run:      {result['mlflow_run_id']} (experiment {result['experiment']!r}, "
          f"tracking {result['mlflow_tracking_uri']})")
    print(f"  browse it:       {result.get('mlflow_run_page') or 'mlflow ui --backend-store-uri ' + result['mlflow_tracking_uri']}")
    return 0


def _plan(args) -> int:
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


def _train(args) -> int:
    from configs.training import load_training_config
    from flows.temporary_server import wait_for_prefect
    from flows.training_flow import training_flow

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


def _ablate(args) -> int:
    from configs.ablation import load_ablation
    from flows.ablation import ablation_flow

    return _matched_runs(lambda: ablation_with_flags(load_ablation(args.ablation), args), ablation_flow,
                         "; `sluice compare {run}` prints the table again")


def _matched_runs(load: Callable, run_flow: Callable, again: str = "") -> int:
    """An ablation or a mixture search: the file and its token budget checked before anything starts, then the
    flow, its report and where MLflow holds it (`again`: what else to say, `{run}` the parent run)."""
    from configs.parsing import RecipeError
    from flows.ablation import budget_figures
    from flows.temporary_server import wait_for_prefect

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


def _sweep(args) -> int:
    from configs.parsing import RecipeError
    from configs.sweep import load_sweep
    from flows.scaling_fit import fit_text
    from flows.sweep import sweep_flow
    from flows.temporary_server import wait_for_prefect

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


def _mix_search(args) -> int:
    from configs.mix_search import load_mix_search
    from flows.mix_search import mix_search_flow

    return _matched_runs(lambda: load_mix_search(args.search), mix_search_flow)


def _scaling_fit(args) -> int:
    import mlflow

    from flows.scaling_fit import fit_text, scaling_fit_flow
    from flows.temporary_server import wait_for_prefect

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


def _doctor(args) -> int:
    import mlflow

    from flows.doctor import doctor
    from tracking.store import tracking_uri

    try:
        result = doctor(args.run_id, tracking_uri(None))
    except mlflow.exceptions.MlflowException as error:
        print(f"sluice doctor {args.run_id}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result["findings"], indent=2) if args.json else result["markdown"])
    return 1 if any(finding["severe"] for finding in result["findings"]) else 0


def _compare(args) -> int:
    import mlflow

    from flows.ablation_report import comparison, comparison_text
    from tracking.store import tracking_uri

    mlflow.set_tracking_uri(tracking_uri(None))
    try:
        table = comparison(args.run_id)
    except (ValueError, mlflow.exceptions.MlflowException) as error:
        print(f"sluice compare {args.run_id}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(table, indent=2) if args.json else comparison_text(table))
    return 0


def _sample(args) -> int:
    import mlflow

    from tracking.store import tracking_uri

    mlflow.set_tracking_uri(tracking_uri(None))
    try:
        model = mlflow.pyfunc.load_model(args.model_uri)
    except mlflow.exceptions.MlflowException as error:
        print(f"sluice sample {args.model_uri}: {error}", file=sys.stderr)
        return 2
    params = {"new_tokens": args.new_tokens, "temperature": args.temperature, "seed": args.seed}
    for prompt, continuation in zip(args.prompts, model.predict(args.prompts, params=params)):
        print(f"{prompt}{continuation}")
    return 0


def _why(args) -> int:
    import dataclasses

    import mlflow

    from flows.document_fate import RunNotFound, curation_run_fates
    from tasks.document_fate import fate_text
    from tracking.store import tracking_uri

    mlflow.set_tracking_uri(tracking_uri(None))
    try:
        run_id, fates = curation_run_fates(args.document, args.run)
    except (RunNotFound, mlflow.exceptions.MlflowException) as error:
        print(f"sluice why: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"run": run_id, "documents": [dataclasses.asdict(fate) for fate in fates]}, indent=2))
    else:
        print(f"curation run {run_id}")
        print(fate_text(args.document, fates))
    return 0 if fates else 1


def _export(args) -> int:
    import mlflow

    from flows.hf_export import export_hf_checkpoint
    from tasks.tokenize.hf_tokenizer import TokenizerNotConvertible
    from tracking.store import tracking_uri
    from training.hf_export import ModelNotExportable

    mlflow.set_tracking_uri(tracking_uri(None))
    try:
        result = export_hf_checkpoint(args.model_uri, args.out_dir)
    except mlflow.exceptions.MlflowException as error:
        print(f"sluice export {args.model_uri}: {error}", file=sys.stderr)
        return 2
    except (ModelNotExportable, TokenizerNotConvertible) as error:
        print(f"sluice export {args.model_uri}: refused: {error}", file=sys.stderr)
        return 3
    print(f"Hugging Face checkpoint written to {result['out_dir']} "
          f"(AutoModelForCausalLM / AutoTokenizer.from_pretrained)")
    if result["artifact_uri"]:
        print(f"logged to MLflow run {result['run_id']}: {result['artifact_uri']}")
    return 0


def _count_or_fraction(text: str) -> int | float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: a positive count or a fraction")
    return value if value < 1 else int(value)


def _eval(args) -> int:
    import mlflow

    from flows.downstream_eval import METRIC_PREFIX, TaskDataUnavailable, UnknownTasks, evaluate_model
    from tasks.evaluation.lm_eval_results import results_table
    from tasks.tokenize.hf_tokenizer import TokenizerNotConvertible
    from tracking.store import tracking_uri
    from training.hf_export import ModelNotExportable

    mlflow.set_tracking_uri(tracking_uri(None))
    try:
        result = evaluate_model(args.model_uri, args.tasks.split(","), limit=args.limit, batch_size=args.batch_size,
                                device=args.device, num_fewshot=args.num_fewshot, quiet=not args.verbose)
    except (UnknownTasks, TaskDataUnavailable) as error:
        print(f"sluice eval: {error}", file=sys.stderr)
        return 2
    except mlflow.exceptions.MlflowException as error:
        print(f"sluice eval {args.model_uri}: {error}", file=sys.stderr)
        return 2
    except (ModelNotExportable, TokenizerNotConvertible) as error:
        print(f"sluice eval {args.model_uri}: refused: {error}", file=sys.stderr)
        return 3
    print(results_table(result["tasks"]))
    if result["run_id"]:
        print(f"logged to MLflow run {result['run_id']}: metrics {METRIC_PREFIX}/<task>/<metric>, "
              f"results runs:/{result['run_id']}/{result['artifact']}")
    return 0


def _export_megatron(args) -> int:
    from storage.megatron_shard import export_token_stage

    try:
        written = export_token_stage(args.manifest, args.out_dir)
    except (OSError, ValueError) as error:
        print(f"sluice export-megatron: {error}", file=sys.stderr)
        return 2
    print(f"{len(written)} Megatron indexed datasets written under {args.out_dir} (data prefixes: the paths without "
          ".bin/.idx)")
    return 0


def _server(args) -> int:
    from flows.server import ServerOptions, run_server
    from storage.locations import state_dir

    return run_server(ServerOptions(
        host=args.host, prefect_port=args.prefect_port, mlflow_port=args.mlflow_port, dask_workers=args.dask_workers,
        dask_port=args.dask_port, dask_dashboard_port=args.dask_dashboard_port, deployments=str(Path(args.deployments).resolve()) if args.deployments else None,
        backend_store_uri=args.backend_store_uri, state=state_dir() / "server", multi_host=args.multi_host,
        certs=args.certs))


def _secrets(args) -> int:
    from flows.cluster_secrets import (CA_CERT, CA_KEY, CREDENTIALS, NODE_CERT, NODE_KEY, SCHEDULER_KEY, SecretsExist,
                                       make_cluster_secrets)

    if args.days < 1:
        print(f"sluice secrets: --days {args.days}: give 1 or more", file=sys.stderr)
        return 2
    try:
        written = make_cluster_secrets(args.folder, args.days)
    except (SecretsExist, OSError) as error:
        print(f"sluice secrets: {error}", file=sys.stderr)
        return 2
    print(f"made in {args.folder}: {', '.join(path.name for path in written)} (certificates valid {args.days} days)")
    print(f"  {CA_KEY} signs certificates and {SCHEDULER_KEY} is the scheduler's: keep them on this machine; every "
          f"other machine gets {CA_CERT}, {NODE_CERT}, {NODE_KEY} and {CREDENTIALS}")
    print(f"  load the credentials before `sluice server --multi-host --certs {args.folder}`, and on every client: "
          f"set -a; . {args.folder / CREDENTIALS}; set +a")
    return 0


def _corpus(args) -> int:
    from dev.corpus.generate import generate_corpus

    summary = generate_corpus(args.out, size=args.size, seed=args.seed, data_dir=args.data_dir)
    print(json.dumps(summary.get("counts", summary), indent=2))
    print(f"corpus written to {args.out}")
    return 0


def run() -> int:
    """The `sluice` console script."""
    code = main()
    # Interpreter shutdown runs full garbage collections over every object Prefect, MLflow, Dask and torch made:
    # about 1.5 s after a flow. The command is done (exit handlers still run), so exempt them.
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(run())
