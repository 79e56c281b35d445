"""The ablation's instrument on known answers: identical recipes are not called different, planted junk is called
worse, planted help is called better on its domain.

    .venv/bin/python benchmarks/calibration.py [--seeds 8] [--tokens 262144]
    .venv/bin/python benchmarks/calibration.py --bench-scale        # full and junk30 at the bench ablation's scale

The instrument is what an ablation's verdict rests on: the trainer (torchrun, FSDP2 on 2 CPU ranks, MLflow), the
mixture's draw, the evaluation suite in exact bits per byte and the paired test with its minimum detectable
effect (`tasks.evaluation.compare`). The data are the bench ablation's own stages (`configs/ablation.yaml` on the
bench corpus, as `benchmarks/ablation.py` runs it, sharing its store): the full recipe's final documents
(`+classifier`), and as junk the raw extraction's documents that the full recipe removed (boilerplate, spam,
near-copies, low-quality pages: what its dedup and filters dropped). The arms, each drawn by the project's
mixture (`tasks.mixture.mix`) from the same token shards, so what two arms share is drawn alike for a seed:
- `full`: the full recipe's documents only;
- `junk10`, `junk30`: 10% / 30% of the training tokens from the junk, the rest from the full recipe;
- `help`: 10% of the training tokens from held-out Gutenberg novels (no book of the suite; every piece sharing a
  13-gram with the suite left out), the rest from the full recipe: a planted improvement on the literary domain.

A model smaller than the bench ablation's (2 layers, d_model 128: 0.8M parameters; `--tokens` per run, 64
updates at lr 0.003 after 8 warmup steps) keeps the cost to about a minute a run. What is measured:
- *A/A*: the `full` arm's seeds split at random into two disjoint groups of 3 paired in order, `--resamples`
  times: the share called (p < 0.05) is the false-call rate; again with seed rounds (3 then 4 seeds each, alpha
  spent over the 2 looks). (Two arms of one recipe at the same seed are the same run, found in one store folder,
  so an A/A pairs different seeds of the recipe.)
- *Planted junk*: `junk10` and `junk30` against `full` at seeds 0-2, paired by seed: called worse? The power the
  report claims for junk10's effect (from all of junk10's seeds: the power of a 3-seed paired test at the
  observed difference and paired noise) against the share of 3-seed subsets of them that are called.
- *Planted help*: `help` against `full` at seeds 0-2 on the literary domain.
- *Variance split*: the `full` arm at seeds 0-2 with one seed control (init, data order, the mixture's draw)
  following the seed at a time, the others at seed 0's.
Writes `results/calibration.json`.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ablation import bench_ablation, shipped_variants  # noqa: E402
from benchmarks.harness import RESULTS, WORK, bench_env, ensure_corpus, log, write_result  # noqa: E402

SMALL_MODEL = {"preset": "tiny", "n_layers": 2, "d_model": 128, "n_heads": 2, "seq_len": 256}
SMALL_OPTIMIZER = {"lr": 0.003, "warmup_steps": 8}      # 64 updates: the bench's 40 warmup steps would take most
HELP_BOOKS = ("austen-emma.txt", "austen-sense.txt", "chesterton-ball.txt", "chesterton-brown.txt")
HELP_DOCUMENT_CHARS = 8000
SOURCE_FULL, SOURCE_JUNK, SOURCE_HELP, SOURCE_SHADOW = "full", "junk", "help", "in-full"
ARMS = {"full": {SOURCE_FULL: 1.0}, "junk10": {SOURCE_FULL: 0.9, SOURCE_JUNK: 0.1},
        "junk30": {SOURCE_FULL: 0.7, SOURCE_JUNK: 0.3}, "help": {SOURCE_FULL: 0.9, SOURCE_HELP: 0.1}}
PAIRED_SEEDS = 3
HOME = WORK / "calibration"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds of the full and junk10 arms (the others: 3)")
    parser.add_argument("--tokens", type=int, help="per run (default 262,144; 1,048,576 with --bench-scale)")
    parser.add_argument("--resamples", type=int, default=40, help="A/A splits of the full arm's seeds")
    parser.add_argument("--bench-scale", action="store_true", help=(
        "the bench ablation's model, optimizer and tokens, and only full and junk30 at 3 seeds (the answer the "
        "small scale could not show): no A/A, no 10%% junk, no help, no variance split "
        "(results/calibration_bench.json unless --out)"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    tokens = args.tokens or (1 << 20 if args.bench_scale else 1 << 18)
    out = args.out or RESULTS / ("calibration_bench.json" if args.bench_scale else "calibration.json")
    os.environ.update(bench_env())
    corpus, origin = ensure_corpus()
    if args.bench_scale:
        ablation = bench_ablation(corpus, shipped_variants(["raw", "+classifier"]), PAIRED_SEEDS, tokens,
                                  name="calibration", eval_every=32)
        seeds = {"full": PAIRED_SEEDS, "junk30": PAIRED_SEEDS}
    else:
        ablation = bench_ablation(corpus, shipped_variants(["raw", "+classifier"]), args.seeds, tokens,
                                  name="calibration", eval_every=16, model=SMALL_MODEL)
        train = ablation.train
        ablation = ablation.model_copy(update={"train": train.model_copy(update={
            "optimizer": train.optimizer.model_copy(update=SMALL_OPTIMIZER)})})
        seeds = {"full": args.seeds, "junk10": args.seeds, "junk30": PAIRED_SEEDS, "help": PAIRED_SEEDS}
    data = arm_inputs(ablation)
    runs = {arm: {seed: train_arm(ablation, data, arm, seed) for seed in range(count)} for arm, count in seeds.items()}
    report = {"corpus": origin, "model": ablation.train.model.model_dump(include={"preset", "n_layers", "d_model",
                                                                                  "n_heads", "seq_len"}),
              "optimizer": ablation.train.optimizer.model_dump(include={"lr", "warmup_steps"}),
              "tokens_per_run": tokens, "seeds": seeds,
              "arms": {arm: {"weights": ARMS[arm], "runs": {seed: run["mlflow_run_id"] for seed, run in by.items()}}
                       for arm, by in runs.items()},
              "junk": data["junk"], "help": data["help"], **planted(runs)}
    if not args.bench_scale:
        split = {control: {seed: train_arm(ablation, data, "full", seed, [control]) for seed in range(PAIRED_SEEDS)}
                 for control in ablation.seed_controls}
        report |= same_recipe(runs, args.resamples, ablation) | {"variance_split": variance_split(runs["full"], split)}
    write_result(out, report, "calibration.py", argv)
    print(json.dumps({key: value for key, value in report.items() if not isinstance(value, dict)}, indent=2))
    return 0


def arm_inputs(ablation) -> dict:
    """The bench ablation's stages for raw and the full recipe (run, or found in the store), and the arms' one
    input: (token shard, document shard) pairs whose `source` column says full / junk / help."""
    from prefect import flow

    @flow(name="calibration-data")
    def stages() -> dict:
        return _prepared(ablation)

    data = stages()
    full = data["variants"]["+classifier"]["stages"]["tokenize"]
    raw = data["variants"]["raw"]["stages"]["tokenize"]
    # the relabelled shards belong to these stages' outputs and this tokenizer: a rerun on other outputs makes its own
    inputs = HOME / "inputs" / hashlib.sha256(json.dumps(
        [full["manifest"], raw["manifest"], data["tokenizer"]["digest"]]).encode()).hexdigest()[:12]
    inputs.mkdir(parents=True, exist_ok=True)
    full_pairs = _pairs(full)
    kept = {doc_id for _, url in full_pairs for doc_id in _ids(url)}
    pairs = [(base, _relabelled(url, inputs / f"full-{index:04d}.parquet", lambda doc_id: SOURCE_FULL))
             for index, (base, url) in enumerate(full_pairs)]
    junk = {"documents": 0, "tokens": 0}
    for index, (base, url) in enumerate(_pairs(raw)):
        relabelled = _relabelled(url, inputs / f"raw-{index:04d}.parquet",
                                 lambda doc_id: SOURCE_SHADOW if doc_id in kept else SOURCE_JUNK)
        pairs.append((base, relabelled))
        junk = _count(base, relabelled, SOURCE_JUNK, junk)
    help_pair, help_figures = _help_shard(data, inputs)
    pairs.append(help_pair)
    return {"pairs": pairs, "suite": data["suite"], "tokenizer": data["tokenizer"], "junk": junk,
            "help": help_figures}


def _prepared(ablation) -> dict:
    import mlflow

    from flows.ablation import budget_figures
    from flows.ablation_data import prepare_data
    from flows.dask_cluster import dask_cluster
    from storage.fs import local_path
    from tracking.store import use_experiment

    seq_len, _ = budget_figures(ablation)
    recipes = {name: recipe.model_copy(update={"store": local_path(recipe.store)})
               for name, recipe in ablation.variant_recipes().items()}
    anchor = recipes["raw"]
    use_experiment(ablation.mlflow.experiment, ablation.mlflow.tracking_uri)
    with mlflow.start_run(run_name="calibration-data") as parent, dask_cluster(anchor.dask):
        return prepare_data(ablation, [0], recipes, anchor, ablation.train.hardware.data_parallel, seq_len,
                            parent.info.run_id)


def _pairs(tokenize: dict) -> list[tuple[str, str]]:
    """A tokenize stage's (token shard, document shard) pairs, as the mixture stage reads them."""
    from storage.manifest import Manifest
    from storage.stage_result import stage_shard_urls

    return list(zip(stage_shard_urls(tokenize), [entry.source for entry in Manifest.load(tokenize["manifest"]).shards]))


def _ids(url: str) -> list[str]:
    from storage.document_shard import read_documents

    return read_documents(url, ["id"]).column("id").to_pylist()


def _relabelled(url: str, out: Path, label) -> str:
    """The document shard with its `source` column set per document (the rows, and so the token shard, as they
    were)."""
    from storage.document_shard import read_documents, write_documents

    if not out.exists():
        table = read_documents(url).to_pydict()
        table["source"] = [label(doc_id) for doc_id in table["id"]]
        write_documents(table, str(out))
    return str(out)


def _count(base: str, url: str, source: str, totals: dict) -> dict:
    from storage.document_shard import read_documents
    from storage.token_shard import TokenShard

    shard = TokenShard(base.removesuffix(".bin"))
    labels = read_documents(url, ["source"]).column("source").to_pylist()
    rows = [row for row, label in enumerate(labels) if label == source]
    return {"documents": totals["documents"] + len(rows),
            "tokens": totals["tokens"] + sum(len(shard.document(row)) for row in rows)}


def _help_shard(data: dict, inputs: Path) -> tuple[tuple[str, str], dict]:
    """Held-out novels cut into documents of about HELP_DOCUMENT_CHARS at paragraph ends, those sharing a
    13-gram with the suite left out, tokenized with the shared tokenizer."""
    from storage.document_shard import DOCUMENT_SCHEMA, write_documents
    from storage.locations import shared_data_dir
    from storage.stage_result import stage_file
    from tasks.evaluation.ngrams import NgramSet
    from tasks.evaluation.suite import NGRAMS_FILE
    from tasks.tokenize.encode import TokenizeJob, tokenize_shard
    from tasks.tokenize.train import MODEL_FILE

    suite_ngrams = NgramSet.load(stage_file(data["suite"], NGRAMS_FILE))
    documents, left_out = [], 0
    for book in HELP_BOOKS:
        text = (shared_data_dir() / "reference" / "gutenberg_nltk" / book).read_text(encoding="utf-8", errors="replace")
        for number, piece in enumerate(_cut(text)):
            if suite_ngrams.shared(piece):
                left_out += 1
            else:
                documents.append({"id": f"help-{book}-{number}", "text": piece})
    url, base = inputs / "help.parquet", inputs / "help-tokens"
    if not url.exists():
        rows = {name: [""] * len(documents) for name in DOCUMENT_SCHEMA.names}
        rows |= {"id": [doc["id"] for doc in documents], "text": [doc["text"] for doc in documents],
                 "lang": ["en"] * len(documents), "lang_score": [1.0] * len(documents),
                 "source": [SOURCE_HELP] * len(documents), "warc_offset": [0] * len(documents)}
        write_documents(rows, str(url))
        tokenize_shard(TokenizeJob(str(url), str(base), stage_file(data["tokenizer"], MODEL_FILE)))
    return (str(base), str(url)), {"books": list(HELP_BOOKS), "documents": len(documents),
                                            "left_out_sharing_a_13gram": left_out,
                                            "chars": sum(len(doc["text"]) for doc in documents)}


def _cut(text: str) -> list[str]:
    paragraphs = [paragraph.strip() for paragraph in re.split(r"\n\s*\n", text) if paragraph.strip()]
    pieces, current = [], []
    for paragraph in paragraphs:
        current.append(paragraph)
        if sum(len(part) for part in current) >= HELP_DOCUMENT_CHARS:
            pieces.append("\n\n".join(current))
            current = []
    return pieces + (["\n\n".join(current)] if current else [])


def train_arm(ablation, data: dict, arm: str, seed: int, controls: list[str] | None = None) -> dict:
    """One run of an arm: its mixture for the seed, then the trainer, as an ablation run; found again when done.
    `controls`: what the seed sets, if not all three (the variance split); the others stay at seed 0's."""
    from configs.mixture import MixtureConfig
    from flows.ablation import budget_figures, run_spec
    from flows.ablation_data import seeded_draw
    from flows.training_flow import training_flow
    from flows.training_inputs import train_on_shards, trainer_code_version
    from storage.stage_figures import TokenizerFigures
    from storage.stage_result import stage_file
    from tasks.evaluation.suite import SUITE_FILE
    from tasks.mixture.mix import mix
    from tasks.mixture.placement import covering_budget
    from tasks.tokenize.train import MODEL_FILE

    ablation = ablation.model_copy(update={"seed_controls": controls or ablation.seed_controls})
    seq_len, _ = budget_figures(ablation)
    ranks = ablation.train.hardware.data_parallel
    seeds = seeded_draw(MixtureConfig(), ablation.seed_controls, seed)
    config = MixtureConfig(
        token_budget=covering_budget(ablation.tokens, 1 << 26, ranks, seq_len), **seeds, validation_fraction=0.01,
        sources=[{"name": source, "where": {"source": [source]}, "weight": weight, "max_epochs": 8}
                 for source, weight in ARMS[arm].items()])
    spec = run_spec(ablation, seed, stage_file(data["suite"], SUITE_FILE))
    key = hashlib.sha256(json.dumps([spec.model_dump(mode="json"), config.model_dump(mode="json"),
                                     data["tokenizer"]["digest"]], sort_keys=True).encode()).hexdigest()[:12]
    folder = HOME / "runs" / f"{arm}-seed{seed}-{key}-{trainer_code_version()}"
    record = folder / "result.json"
    if record.exists():
        return json.loads(record.read_text())
    mixture_dir = HOME / "mixtures" / f"{arm}-{hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:12]}"
    tokenizer = TokenizerFigures.of(data["tokenizer"])
    mixed = mix(data["pairs"], str(mixture_dir), tokenizer.vocab_size, config)
    shares = ", ".join(f"{row['source']} {row['weight_realized']:.3f}" for row in mixed["sources"])
    log(f"{arm} seed {seed} ({', '.join(ablation.seed_controls)}): {mixed['train_tokens']:,} training tokens drawn "
        f"({shares})")
    train = train_on_shards(spec, f"calibration-{arm}-seed{seed}", str(folder),
                            [shard["path"] for shard in mixed["shards"]], stage_file(data["tokenizer"], MODEL_FILE),
                            tokenizer.vocab_size, tokenizer.heldout_bytes_per_token,
                            ablation.mlflow.experiment, ablation.mlflow.tracking_uri,
                            {"sluice.kind": "calibration", "sluice.arm": arm, "sluice.seed": str(seed)})
    result = training_flow(train)
    record.write_text(json.dumps(result))
    return result


def suite_scores(run_id: str) -> dict[str, float]:
    import mlflow

    metrics = mlflow.MlflowClient().get_run(run_id).data.metrics
    return {key.removeprefix("suite_bpb/"): value for key, value in metrics.items() if key.startswith("suite_bpb/")}


def versus(baseline: dict[int, dict], variant: dict[int, dict], power=None) -> dict:
    """The paired comparison of two arms' scores (seed -> domain -> bpb), per domain: variant minus baseline."""
    from tasks.evaluation.compare import Power, RunScore, compare

    table = compare([RunScore("a", seed, bpb) for seed, bpb in baseline.items()]
                    + [RunScore("b", seed, bpb) for seed, bpb in variant.items()], ["a", "b"], "a", power or Power())
    return table["variants"]["b"]["vs_baseline"]


def arm_scores(runs: dict) -> dict:
    return {arm: {seed: suite_scores(run["mlflow_run_id"]) for seed, run in by.items()} for arm, by in runs.items()}


def planted(runs: dict) -> dict:
    """The planted arms against `full` at seeds 0-2, paired by seed: junk called worse, help called better on
    literary; with junk10 at more seeds, the power the report claims for its effect against the share of 3-seed
    subsets called."""
    from scipy import stats

    from tasks.evaluation.compare import Power, two_sided_power

    scores = arm_scores(runs)
    full = scores["full"]
    paired = {arm: versus({seed: full[seed] for seed in range(PAIRED_SEEDS)},
                          {seed: scores[arm][seed] for seed in range(PAIRED_SEEDS)})
              for arm in scores if arm != "full"}
    worse = lambda cell: cell["called"] and cell["difference"] > 0        # noqa: E731
    report = {"per_domain": {arm: {metric: _cell(cell) for metric, cell in by.items()} for arm, by in paired.items()},
              "scores": {arm: {seed: {metric: round(value, 5) for metric, value in bpb.items()}
                               for seed, bpb in by.items()} for arm, by in scores.items()}}
    for arm in ("junk10", "junk30"):
        if arm in paired:
            report |= {f"junk_{arm[4:]}_called": worse(paired[arm]["macro"]), f"junk_{arm[4:]}": _cell(paired[arm]["macro"])}
    if "help" in paired:
        report |= {"help_called": paired["help"]["literary"]["called"] and paired["help"]["literary"]["difference"] < 0,
                   "help_literary": _cell(paired["help"]["literary"]), "help_macro": _cell(paired["help"]["macro"])}
    if len(scores.get("junk10", {})) > PAIRED_SEEDS:
        every = versus(full, scores["junk10"])["macro"]          # all of junk10's seeds: its effect and paired noise
        subsets = list(itertools.combinations(sorted(scores["junk10"]), PAIRED_SEEDS))
        seen = [versus({seed: full[seed] for seed in subset}, {seed: scores["junk10"][seed] for seed in subset})
                ["macro"] for subset in subsets]
        critical = float(stats.t.ppf(1 - Power().alpha / 2, PAIRED_SEEDS - 1))
        claimed = two_sided_power(abs(every["difference"]) * math.sqrt(PAIRED_SEEDS) / every["paired_std"],
                                  PAIRED_SEEDS - 1, critical)
        report |= {"junk_10_power_claimed": round(claimed, 3),
                   "junk_10_power_seen": round(float(np.mean([worse(cell) for cell in seen])), 3),
                   "junk_10_power_from": {"seeds": len(scores["junk10"]), "difference": round(every["difference"], 5),
                                          "paired_std": round(every["paired_std"], 5), "subsets_of_3": len(subsets)}}
    return report


def same_recipe(runs: dict, resamples: int, ablation) -> dict:
    """A/A: the full arm's seeds split at random into two groups of 4 paired in order, `resamples` times; the
    share of 3-seed comparisons called, and with seed rounds (3 then 4 seeds, alpha spent over the looks)."""
    from configs.ablation import SeedRounds
    from flows.ablation import look_power

    full = arm_scores({"full": runs["full"]})["full"]
    rng = np.random.default_rng(0)
    aa, aa_rounds = [], []
    rounds = ablation.model_copy(update={"seeds": [0, 1, 2], "seed_rounds": SeedRounds(max=4, step=1)})
    spent = look_power(rounds)
    for _ in range(resamples):
        order = rng.permutation(sorted(full))
        a = {index: full[int(seed)] for index, seed in enumerate(order[:4])}
        b = {index: full[int(seed)] for index, seed in enumerate(order[4:8])}
        aa.append(versus({k: a[k] for k in range(3)}, {k: b[k] for k in range(3)})["macro"]["called"])
        aa_rounds.append(any(versus({k: a[k] for k in range(n)}, {k: b[k] for k in range(n)}, spent)["macro"]["called"]
                             for n in (3, 4)))
    return {"aa_comparisons": resamples, "aa_false_call_rate": round(float(np.mean(aa)), 4),
            "aa_false_call_rate_seed_rounds": round(float(np.mean(aa_rounds)), 4),
            "aa_seed_rounds": {"looks": [3, 4], "alpha_per_look": spent.alpha}}


def variance_split(full: dict[int, dict], split: dict[str, dict[int, dict]]) -> dict:
    """The full arm's seed std of macro bpb with each seed control varied alone (seeds 0-2; seed 0 is the same
    run for all), each control's share of their summed variances, and the std with all three varied."""
    from tasks.evaluation.compare import noise_shares

    rows = noise_shares({control: [suite_scores(run["mlflow_run_id"])["macro"] for run in runs.values()]
                         for control, runs in split.items()})
    every = [suite_scores(full[seed]["mlflow_run_id"])["macro"] for seed in range(PAIRED_SEEDS)]
    return {"arm": "full", "controls": rows, "all_controls_std_seeds_0_2": round(float(np.std(every, ddof=1)), 5),
            "all_controls_std_all_seeds": round(float(np.std(
                [suite_scores(run["mlflow_run_id"])["macro"] for run in full.values()], ddof=1)), 5)}


def _cell(cell: dict) -> dict:
    return {key: (round(value, 5) if isinstance(value, float) else value) for key, value in cell.items()}


if __name__ == "__main__":
    sys.exit(main())
