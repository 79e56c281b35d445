"""The `sluice` command: parse (cli.parser), set the environment up before Prefect or MLflow load, check a recipe
before any service starts, start a temporary Prefect server for the commands that run flows, keep a quiet command's
console to progress and its log to a file, then run the subcommand's one function."""
from __future__ import annotations

import gc
import sys
from collections.abc import Callable

from cli import model_commands, service_commands, training_commands
from cli.parser import build_parser
from cli.run_command import checked_recipe, run_recipe
from flows.environment import apply_cli_defaults

# a progress display and a summary on the console, the full log to a file
QUIET_COMMANDS = ("run", "train", "ablate", "sweep", "mix-search")
FLOW_COMMANDS = QUIET_COMMANDS + ("scaling",)         # they call flows: a Prefect API is needed
# every subcommand but run and validate, which take the recipe checked before anything starts
COMMANDS: dict[str, Callable[..., int]] = {
    "server": service_commands.server, "secrets": service_commands.secrets, "corpus": service_commands.corpus,
    "recipe-reference": service_commands.recipe_reference,
    "plan": training_commands.plan, "train": training_commands.train, "ablate": training_commands.ablate,
    "sweep": training_commands.sweep, "mix-search": training_commands.mix_search,
    "scaling": training_commands.scaling_fit,
    "compare": model_commands.compare, "doctor": model_commands.doctor, "sample": model_commands.sample,
    "why": model_commands.why, "export": model_commands.export, "eval": model_commands.evaluate,
    "export-megatron": model_commands.export_megatron,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet = args.command in QUIET_COMMANDS and not args.verbose
    apply_cli_defaults(quiet=quiet)  # before Prefect / MLflow load
    recipe = None
    if args.command in ("run", "validate"):
        from configs.parsing import RecipeError

        try:
            recipe = checked_recipe(args)            # before any service starts
        except RecipeError as error:
            print(error, file=sys.stderr)
            return 2
        if args.command == "validate":
            print(f"{args.recipe}: valid recipe {recipe.name!r}, and this machine can run it")
            return 0
    if args.command in FLOW_COMMANDS:
        from services.temporary_server import start_temporary_server

        start_temporary_server()     # comes up while the flows are imported
        if recipe is not None and not recipe.dask.address:
            from flows.dask_cluster import start_forkserver

            start_forkserver()           # its LocalCluster's workers come from it: it imports while Prefect starts
    log = None
    if quiet:
        from flows.console import leave_failures_to_the_report, log_to_file
        from storage.locations import state_dir

        log = log_to_file(state_dir() / "logs", args.command)
        leave_failures_to_the_report()
        print(f"full log: {log} (-v shows it live)", file=sys.stderr)
    if args.command not in QUIET_COMMANDS:
        return COMMANDS[args.command](args)
    try:
        return run_recipe(recipe) if args.command == "run" else COMMANDS[args.command](args)
    except Exception as error:         # a failed run: a few lines, the traceback in the log (and live with -v)
        from flows.failure_report import report_failure

        return report_failure(error, f"sluice {args.command}", log)


def run() -> int:
    """The `sluice` console script."""
    code = main()
    # Interpreter shutdown runs full garbage collections over every object Prefect, MLflow, Dask and torch made:
    # about 1.5 s after a flow. The command is done (exit handlers still run), so exempt them.
    gc.freeze()
    return code
