"""What the quality stages show people: model training results, the funnel (documents and word tokens after
each filter family), drops per reason, histograms with thresholds, and a data card of examples."""
from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

from configs.quality import QualityFilterConfig
from tasks.stage_report import StageReport
from tracking.charts import png_bytes
from tasks.fan_out import in_background
from tasks.quality.apply import KEPT
from tasks.quality.charts import histograms_png, reliability_png
from tasks.quality.families import thresholds_by_attribute


EVALUATION_COLUMNS = ("positives", "negatives", "threshold", "precision", "recall", "auc")


def models_report(kenlm: list[dict], classifier: dict | None, folder: str) -> StageReport:
    lines = ["## Quality models", "", "| KenLM language | reference files | lines | characters | model bytes | s |",
             "|---|---|---|---|---|---|",
             *[f"| {row['lang']} | {row['reference_files']} | {row['reference_lines']:,} | {row['reference_chars']:,} "
               f"| {row['kenlm_bytes']:,} | {row['seconds']} |" for row in kenlm]]
    tables, files = {"kenlm": kenlm}, []
    if classifier:
        evaluations = {"held-out split": classifier["heldout"]}
        if classifier["external"]:
            evaluations["quality_labelled (never trained on)"] = classifier["external"]
        rows = [{"evaluation": name, **{key: result[key] for key in EVALUATION_COLUMNS},
                 "ece": result["reliability"]["ece"], "ece_uncalibrated": result["reliability_uncalibrated"]["ece"]}
                for name, result in evaluations.items()]
        tables["classifier"] = rows
        tables["classifier_thresholds"] = [{"evaluation": name, **row} for name, result in evaluations.items()
                                           for row in result["at_thresholds"]]
        calibration = classifier["calibration"]
        lines += ["", f"fastText classifier: {classifier['train_examples']} training examples "
                      f"({classifier['positive_pool']} reference chunks, {classifier['negative_pool']} raw documents "
                      f"available); Platt calibration a = {calibration['a']}, b = {calibration['b']} from "
                      f"{calibration['fitted_on']} held-out examples, measured on the other held-out half.", "",
                  "| evaluation | positives | negatives | precision | recall | AUC | ECE (uncalibrated) |",
                  "|---|---|---|---|---|---|---|",
                  *[f"| {row['evaluation']} | {row['positives']} | {row['negatives']} | {row['precision']} | "
                    f"{row['recall']} | {row['auc']} | {row['ece']} ({row['ece_uncalibrated']}) |" for row in rows],
                  "", f"Precision and recall at threshold {rows[0]['threshold']} of the calibrated probability; at "
                      "other thresholds in the `classifier_thresholds` table."]
        curves = {f"{name}, {kind}": result[key] for name, result in evaluations.items()
                  for kind, key in (("calibrated", "reliability"), ("uncalibrated", "reliability_uncalibrated"))}
        chart = os.path.join(folder, "classifier_reliability.png")   # drawn on a worker (~1.3 s in this process)
        Path(chart).write_bytes(in_background(partial(png_bytes, reliability_png, curves))())
        files.append(chart)
    return StageReport(markdown="\n".join(lines), tables=tables, files=files)


def histograms_chart(config: QualityFilterConfig, cutoffs: dict) -> Callable[[], bytes]:
    """The attribute histograms with the thresholds marked, drawn on the stage's cluster while the filter runs."""
    return in_background(partial(png_bytes, histograms_png, cutoffs["histograms"],
                                 thresholds_by_attribute(config, cutoffs)))


def filter_report(cutoffs: dict, funnel: list[dict], drops: dict[str, int], examples: dict[str, list[dict]],
                  histograms: bytes, folder: str) -> StageReport:
    chart = os.path.join(folder, "quality_histograms.png")
    Path(chart).write_bytes(histograms)
    lines = ["## Quality filter", "", "| step | documents | word tokens |", "|---|---|---|",
             *[f"| {row['step']} | {row['documents']:,} | {row['word_tokens']:,} |" for row in funnel],
             "", "| dropped by | documents |", "|---|---|",
             *[f"| {reason} | {count} |" for reason, count in sorted(drops.items(), key=lambda item: -item[1])],
             "", f"Perplexity bucket edges per language: {cutoffs['kenlm_bucket_edges']}; classifier threshold: "
                 f"{cutoffs['classifier_min_hq_prob']}", "", "## Data card: examples", ""]
    for label, rows in examples.items():
        lines.append(f"### {'kept' if label == KEPT else 'dropped: ' + label}")
        for row in rows:
            snippet = " ".join(row["text"].split())[:300].replace("|", "\\|")
            lines.append(f"- `{row['id']}` ({row['lang']}) {row['url']}: {snippet}")
        lines.append("")
    tables = {"funnel": funnel, "drops": [{"reason": reason, "documents": count} for reason, count in drops.items()]}
    return StageReport(markdown="\n".join(lines), tables=tables, files=[chart])
