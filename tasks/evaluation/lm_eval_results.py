"""What `sluice eval` reports from lm-evaluation-harness's results (flows/downstream_eval.py runs it): each task's
numeric metrics, and likelihood metrics from its per-sample log-likelihoods (`log_samples=True`):
- `gold_logprob`: the mean over items of the correct answer's log-probability given the context (nats; for a
  multiple-choice task the gold choice's continuation, for a loglikelihood task such as LAMBADA the target's);
- `gold_choice_prob` (multiple-choice tasks): the mean probability of the gold choice among the choices,
  exp(ll_gold) / sum exp(ll_choice), which moves with the model before the argmax (accuracy) does;
- `items`: how many items were scored.
Plain dicts in, plain dicts out: lm-eval itself is not imported here.
"""
from __future__ import annotations

import math


def task_metrics(results: dict) -> dict[str, dict[str, float]]:
    """{task: {metric: value}}: lm-eval's numeric metrics and the likelihood metrics from its samples."""
    metrics = {}
    for task, values in results["results"].items():
        numbers = {}
        for key, value in values.items():
            if "," not in key or not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not math.isfinite(value):
                continue
            metric, filter_name = key.split(",", 1)
            numbers[metric if filter_name == "none" else f"{metric}/{filter_name}"] = float(value)
        output_type = results.get("configs", {}).get(task, {}).get("output_type")
        numbers |= likelihood_metrics(results.get("samples", {}).get(task, []), output_type)
        if numbers:
            metrics[task] = numbers
    return metrics


def likelihood_metrics(samples: list[dict], output_type: str | None) -> dict[str, float]:
    """`gold_logprob` (and `gold_choice_prob` for multiple choice) over one task's logged samples; {} for a task
    whose requests are not log-likelihoods of answers (generation, a document's rolling perplexity)."""
    if output_type not in ("multiple_choice", "loglikelihood"):
        return {}
    gold_logprobs, choice_probs = [], []
    for sample in _first_filter(samples):
        lls = _loglikelihoods(sample)
        gold = _gold_index(sample, len(lls)) if lls else None
        if gold is None:
            continue
        gold_logprobs.append(lls[gold])
        if len(lls) > 1:
            top = max(lls)
            choice_probs.append(math.exp(lls[gold] - top) / sum(math.exp(ll - top) for ll in lls))
    if not gold_logprobs:
        return {}
    out = {"gold_logprob": sum(gold_logprobs) / len(gold_logprobs), "items": float(len(gold_logprobs))}
    if choice_probs:
        out["gold_choice_prob"] = sum(choice_probs) / len(choice_probs)
    return out


def _first_filter(samples: list[dict]) -> list[dict]:
    """One record per document: lm-eval logs a document once per filter."""
    filters = [sample.get("filter", "none") for sample in samples]
    keep = "none" if "none" in filters else (filters[0] if filters else None)
    return [sample for sample in samples if sample.get("filter", "none") == keep]


def _loglikelihoods(sample: dict) -> list[float]:
    """The log-likelihood of each request of the sample (one per choice), or [] when they are not (ll, greedy)."""
    lls = []
    for response in sample.get("filtered_resps") or []:
        value = response[0] if isinstance(response, (list, tuple)) and response else response
        if isinstance(value, (list, tuple)):       # unfiltered shape: [(ll, is_greedy)]
            value = value[0] if value else None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return []
        lls.append(float(value))
    return lls


def _gold_index(sample: dict, choices: int) -> int | None:
    """The correct request's index: a multiple-choice target is the gold choice's index (or its text); a
    loglikelihood task has one request, the target's."""
    target = sample.get("target")
    if choices == 1:
        return 0
    if isinstance(target, bool):
        return None
    if isinstance(target, int):
        return target if 0 <= target < choices else None
    if isinstance(target, str):
        if target.strip().lstrip("-").isdigit():
            index = int(target)
            return index if 0 <= index < choices else None
        continuations = [str(argument[1]).strip() for argument in _arguments(sample)]
        return continuations.index(target.strip()) if target.strip() in continuations else None
    return None


def _arguments(sample: dict) -> list:
    arguments = sample.get("arguments") or []
    if isinstance(arguments, dict):                # some versions key them "gen_args_0", ...
        arguments = [(value.get("arg_0"), value.get("arg_1")) for value in arguments.values()]
    return arguments


def results_table(metrics: dict[str, dict[str, float]]) -> str:
    """A short text table: one block per task, its metrics (a value ± its stderr where lm-eval gave one)."""
    lines = []
    for task, values in metrics.items():
        items = values.get("items")
        lines.append(f"{task}" + (f" ({int(items)} items)" if items else ""))
        for metric, value in values.items():
            if metric.endswith("_stderr") or "_stderr/" in metric or metric == "items":
                continue
            stderr = values.get(metric.replace("/", "_stderr/", 1) if "/" in metric else f"{metric}_stderr")
            lines.append(f"  {metric:<24} {value:10.4f}" + (f"  ± {stderr:.4f}" if stderr is not None else ""))
    return "\n".join(lines)
