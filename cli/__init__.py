"""The `sluice` command: run a recipe, build the demo corpus, validate a recipe, plan and run training, run and
compare ablations, learn a data mixture (`sluice mix-search`), sweep model sizes and fit a scaling law, sample,
export or evaluate (lm-evaluation-harness) a trained model, say what became of a document (`sluice why`), export
token shards for Megatron, start the long-running services (`sluice server`), and make a multi-host cluster's
certificates and credentials (`sluice secrets`). One module per group of subcommands, one function per
subcommand (cli.main's COMMANDS); the flows they call live in flows/."""
