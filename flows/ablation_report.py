"""What an ablation leaves for people, read back from MLflow so `sluice compare` and the flow print the same thing:
the comparison table (mean ± std over seeds per domain and macro, difference to the baseline, paired test, SNR),
one verdict line per variant, what each variant's stages removed, the two charts, and the runs' MLflow datasets.
"""
from __future__ import annotations

import json
import os
import time

import mlflow
from mlflow.entities import Metric, Run
from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact

from configs.ablation import AblationConfig
from flows.reporting import artifact_key
from flows.training_inputs import TRAINER_CODE_TAG, mixture_dataset, trainer_code_version
from storage.stage_result import StageResult, stage_file
from tasks.evaluation.charts import curves_png, domain_bars_png, steps_png
from tasks.evaluation.compare import (Power, RunScore, compare, noise_shares, rounded, steps_markdown, table_markdown,
                                      verdict)
from tasks.evaluation.removals import variant_removals
from tasks.evaluation.suite import SUITE_FILE
from tracking.datasets import RunDataset
from tracking.run_members import members
from tracking.store import artifact_url

RUN_KIND = "ablation-run"
SPLIT_KIND = "ablation-split-run"     # a run of the variance split (`variance_split`), not in the comparison
SUITE_METRIC = "suite_bpb/"


def ablation_datasets(mixture: StageResult, suite: StageResult) -> list[RunDataset]:
    """A training run's data: its mixture (training) and the ablation's suite (evaluation)."""
    return [mixture_dataset(mixture),
            RunDataset(f"eval-suite-{suite['fingerprint']}", stage_file(suite, SUITE_FILE), suite["digest"],
                       "evaluation")]


def training_runs(parent_id: str) -> dict[tuple[str, int], Run]:
    """(variant, seed) -> the ablation's run for it (`tracking.run_members`: a run another ablation trained counts
    too)."""
    return {(role["variant"], role["seed"]): run for run, role in members(parent_id)}


def run_role(variant: str, seed: int) -> dict:
    return {"variant": variant, "seed": seed}


def comparison(parent_id: str) -> dict:
    """The comparison of a finished (or partly finished) ablation, from its MLflow runs alone. Runs trained by
    another version of the trainer's code than the one reading them are listed under `older_code` (variant ->
    seed -> their code version), marked in the table and named in the verdict."""
    parent = mlflow.MlflowClient().get_run(parent_id)
    if parent.data.tags.get("sluice.kind") != "ablation":
        raise ValueError(f"MLflow run {parent_id} is not an ablation (tag sluice.kind is "
                         f"{parent.data.tags.get('sluice.kind')!r})")
    variants = json.loads(parent.data.tags["sluice.variants"])
    baseline = parent.data.tags["sluice.baseline"]
    finished = {role: run for role, run in training_runs(parent_id).items() if run.info.status == "FINISHED"}
    runs = [RunScore(variant, seed, {key.removeprefix(SUITE_METRIC): value for key, value in run.data.metrics.items()
                                     if key.startswith(SUITE_METRIC)})
            for (variant, seed), run in finished.items()]
    table = compare([run for run in runs if run.bpb], variants, baseline, parent_power(parent))
    table["runs"] = {variant: {seed: run.info.run_id for (name, seed), run in sorted(finished.items())
                               if name == variant} for variant in variants}
    current = trainer_code_version()
    table["trainer_code"] = current
    older = {(variant, seed): run.data.tags[TRAINER_CODE_TAG] for (variant, seed), run in sorted(finished.items())
             if run.data.tags[TRAINER_CODE_TAG] != current}
    table["older_code"] = {variant: {seed: code for (name, seed), code in older.items() if name == variant}
                           for variant in variants if any(name == variant for name, _ in older)}
    table["verdicts"] = {name: verdict(table, name) for name in variants if name != baseline}
    table["step_verdicts"] = {name: verdict(table, name, against="vs_previous") for name in variants[1:]}
    table["headline"] = variants[-1] if variants[-1] != baseline else next(iter(table["verdicts"]))
    table["verdict"] = table["verdicts"][table["headline"]]
    if older:
        named = "; ".join(f"{variant} seed {seed} ({code})" for (variant, seed), code in older.items())
        table["verdict"] += f" [mixes runs trained by other versions of the trainer's code than {current}: {named}]"
    return table


def power_tags(power: Power) -> dict[str, str]:
    return {"sluice.alpha": repr(power.alpha), "sluice.power": repr(power.power), "sluice.seed_cap": str(power.seed_cap)}


def parent_power(parent: Run) -> Power:
    """The test and power an ablation's verdicts use, as its parent run records them."""
    tags = parent.data.tags
    return Power(alpha=float(tags["sluice.alpha"]), power=float(tags["sluice.power"]),
                 seed_cap=int(tags["sluice.seed_cap"]))


def headline_figures(table: dict) -> dict[str, float]:
    """The verdict's figures as the parent run's metrics, per metric: the headline variant's difference to the
    baseline, its p, its minimum detectable effect, and whether it is called (1 or 0)."""
    cells = table["variants"][table["headline"]]["vs_baseline"]
    figures = {}
    for metric, cell in cells.items():
        for key, name in (("difference", "difference"), ("p_value", "p"), ("mde", "detectable")):
            if cell[key] is not None:
                figures[f"{name}/{metric}"] = float(cell[key])
        figures[f"called/{metric}"] = float(cell["called"])
    return figures


def comparison_text(table: dict) -> str:
    steps = ["Each step against the one before it (* called at alpha "
             f"{table['power']['alpha']:.3g}; detectable: the difference called {table['power']['power']:.0%} of "
             "the time):", "", steps_markdown(table), "", *[f"- {line}" for line in table["step_verdicts"].values()],
             ""] if len(table["variants"]) > 2 else []
    return "\n".join([table_markdown(table), "", *[f"- {line}" for line in table["verdicts"].values()], "", *steps,
                      f"Verdict: {table['verdict']}"])


def histories(parent_id: str, metric: str = "macro") -> dict[str, dict[int, list[tuple[int, float]]]]:
    """variant -> seed -> [(training tokens, bpb of `metric`)] from the runs' metric histories (the tokens each step
    had trained on as the trainer logged them: under a batch ramp the updates differ in size)."""
    client = mlflow.MlflowClient()
    curves: dict[str, dict[int, list[tuple[int, float]]]] = {}
    for (variant, seed), run in training_runs(parent_id).items():
        tokens = {point.step: int(point.value) for point in client.get_metric_history(run.info.run_id, "tokens")}
        points = [(tokens[point.step], point.value)
                  for point in client.get_metric_history(run.info.run_id, f"{SUITE_METRIC}{metric}")]
        curves.setdefault(variant, {})[seed] = sorted(points)
    return curves


def variance_split(table: dict, split: dict[str, dict[int, str]]) -> dict:
    """Per seed control, the baseline's seed std of macro bpb with that control alone varying, and its share of
    the variances summed over the controls; beside them the seed std with all of them varying."""
    client = mlflow.MlflowClient()
    rows = noise_shares({control: [client.get_run(run_id).data.metrics[f"{SUITE_METRIC}macro"]
                                   for run_id in runs.values()] for control, runs in split.items()})
    baseline = table["variants"][table["baseline"]]["metrics"]["macro"]
    return {"variant": table["baseline"], "controls": rows, "all_controls_std": baseline["std"]}


def split_text(split: dict) -> str:
    parts = ", ".join(f"{control} {row['std']:.4f}" + (f" ({row['share']:.0%})" if row["share"] is not None else "")
                      for control, row in split["controls"].items())
    return (f"Seed noise of {split['variant']} (macro bpb std over seeds) with one seed control varied at a time: "
            f"{parts}; all together {split['all_controls_std']:.4f}.")


CHARTS = ("bpb_vs_tokens", "bpb_by_domain", "steps_by_domain")   # steps: each variant against the one before


def publish_ablation_report(ablation: AblationConfig, parent_id: str, data: dict, tracking: str,
                            report_dir: str, split: dict[str, dict[int, str]] | None = None,
                            charted: tuple[str, ...] = CHARTS) -> dict:
    """Table, verdicts, the `charted` CHARTS and the removals, as MLflow artifacts of the parent run and Prefect
    artifacts; `split`: the variance split's runs (control -> seed -> run id)."""
    table = comparison(parent_id)
    if split:
        table["variance_split"] = variance_split(table, split)
    removals = variant_removals(ablation.tokens, data["variants"])
    os.makedirs(report_dir, exist_ok=True)
    drawn = {"bpb_vs_tokens": lambda path: curves_png(histories(parent_id), list(table["variants"]), path),
             "bpb_by_domain": lambda path: domain_bars_png(table, path),
             "steps_by_domain": lambda path: steps_png(table, path) if len(table["variants"]) > 2 else None}
    charts = [path for path in (drawn[name](os.path.join(report_dir, f"{name}.png")) for name in charted) if path]
    text = comparison_text(table)
    why_lines = ["| variant | documents in | documents out | removed (documents / ≈tokens per reason) | unique tokens "
                 "| epochs |", "|---|---|---|---|---|---|"]
    for name, row in removals.items():
        removed = "; ".join(f"{stage}: " + ", ".join(f"{reason} {counts['documents']} / {counts['tokens'] or 0:,}"
                                                    for reason, counts in drops.items())
                            for stage, drops in row["removed"].items() if drops) or "nothing"
        why_lines.append(f"| {name} | {row['documents_in']} | {row['documents_out']} | {removed} | "
                         f"{row['unique_train_tokens']:,} | {row['epochs']} |")
    if split:
        text += "\n\n" + split_text(table["variance_split"])
    markdown = "\n".join([f"# Ablation {ablation.name}", "", f"**{table['verdict']}**", "", text, "",
                          "## What each variant's stages removed", "", *why_lines])
    client = mlflow.MlflowClient()
    client.log_text(parent_id, json.dumps(table | {"why": removals}, indent=2), "comparison.json")
    client.log_text(parent_id, markdown, "comparison.md")
    client.set_tag(parent_id, "sluice.verdict", table["verdict"][:5000])
    client.set_tag(parent_id, "mlflow.note.content", markdown)       # the run page's description
    client.log_batch(parent_id, metrics=[Metric(key, value, int(time.time() * 1000), 0)
                                         for key, value in headline_figures(table).items()])
    for path in charts:
        client.log_artifact(parent_id, path, "charts")
    key = artifact_key(ablation.name)
    images = []
    for path in charts:
        url = artifact_url(tracking, parent_id, f"charts/{os.path.basename(path)}")
        if url:
            create_image_artifact(image_url=url, key=f"{key}-{artifact_key(os.path.basename(path)[:-4])}")
        images.append(f"![{os.path.basename(path)}]({url})" if url else f"`charts/{os.path.basename(path)}` "
                                                                          f"(in MLflow run {parent_id})")
    create_markdown_artifact(key=f"{key}-comparison", markdown=markdown + "\n\n## Charts\n\n" + "\n\n".join(images),
                             description=f"ablation {ablation.name}: which recipe wins, by how much, and why")
    create_table_artifact(key=f"{key}-table", table=[
        {"variant": name, **{f"{metric} bpb": round(row["metrics"][metric]["mean"], 5) for metric in table["metrics"]},
         **{f"{metric} std": round(row["metrics"][metric]["std"], 5) for metric in ("macro",)},
         "vs baseline": rounded(row.get("vs_baseline", {}).get("macro", {}).get("difference"), 5),
         "snr": rounded(row.get("vs_baseline", {}).get("macro", {}).get("snr"), 2)}
        for name, row in table["variants"].items()], description=f"ablation {ablation.name}: bits per byte")
    return {"table": table, "verdict": table["verdict"], "why": removals, "charts": charts, "markdown": markdown}
