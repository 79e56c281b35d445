"""The subcommands on finished runs and trained models: `compare`, `doctor`, `sample`, `why`, `export`, `eval`,
`export-megatron`."""
from __future__ import annotations

import json
import sys


def doctor(args) -> int:
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


def compare(args) -> int:
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


def sample(args) -> int:
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


def why(args) -> int:
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


def export(args) -> int:
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


def evaluate(args) -> int:
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


def export_megatron(args) -> int:
    from storage.megatron_shard import export_token_stage

    try:
        written = export_token_stage(args.manifest, args.out_dir)
    except (OSError, ValueError) as error:
        print(f"sluice export-megatron: {error}", file=sys.stderr)
        return 2
    print(f"{len(written)} Megatron indexed datasets written under {args.out_dir} (data prefixes: the paths without "
          ".bin/.idx)")
    return 0
