"""The `sluice` command line: every subcommand and its options (cli.main runs them)."""
from __future__ import annotations

import argparse
from pathlib import Path

from configs.sweep import BOOTSTRAP_RESAMPLES


def build_parser() -> argparse.ArgumentParser:
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
        "environment), over HTTPS and Dask's TLS with the certificates of --certs"))
    server.add_argument("--certs", type=Path, help="with --multi-host: the folder of TLS certificates that "
                                                   "`sluice secrets` made (HTTPS for Prefect and MLflow, TLS for Dask)")
    server.add_argument("--prefect-port", type=int, default=4200)
    server.add_argument("--mlflow-port", type=int, default=5000)
    server.add_argument("--dask-workers", type=int, default=0, help="start a Dask scheduler and N worker processes")
    server.add_argument("--dask-port", type=int, default=8786)
    server.add_argument("--dask-dashboard-port", type=int, default=8787)
    server.add_argument("--deployments", default="configs/deployments.yaml",
                        help="the deployments file to serve ('' serves none)")
    server.add_argument("--backend-store-uri", help="MLflow's backend store (default: SQLite in the state dir)")

    made = commands.add_parser("secrets", help="make a multi-host cluster's TLS certificates (a CA, Dask's "
                                               "scheduler's and nodes', the Prefect and MLflow servers') and its "
                                               "Prefect and MLflow credentials")
    made.add_argument("folder", type=Path)
    made.add_argument("--host", action="append", default=[], dest="hosts", help=(
        "an address or name the Prefect and MLflow servers are reached at (repeat for each; loopback is always "
        "included): the server's --host"))
    made.add_argument("--days", type=int, default=365, help="how long the certificates are valid (default 365)")
    made.add_argument("--force", action="store_true", help="replace the secrets the folder holds (every machine then "
                                                           "needs the new ones)")
    return parser


def _count_or_fraction(text: str) -> int | float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: a positive count or a fraction")
    return value if value < 1 else int(value)
