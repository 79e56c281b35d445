"""`sluice eval MODEL_URI --tasks T1,T2`: downstream tasks through lm-evaluation-harness (`lm_eval`) on the
model's Hugging Face export, their metrics logged to the MLflow run that logged the model.

The model is exported (flows/hf_export.py) into a temporary folder and loaded by lm-eval's `hf` model on the GPU
when there is one, else the CPU, in float32. Tasks are lm-eval's own (HellaSwag, ARC, PIQA, ...: their data comes
from the Hugging Face Hub, so they need network access) or sluice's local ones under
tasks/evaluation/lm_eval_tasks/ (data built from the shared data at run time: `sluice_lastword`). With only local
tasks, the run is kept offline (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE, unless already set).

Logged per task, as `eval/<task>/<metric>` on the model's run (and linked to the logged model, so its page shows
them too): what tasks/evaluation/lm_eval_results.py reads from
lm-eval's results (its metrics, and the likelihood metrics `gold_logprob` and `gold_choice_prob` from the
per-sample log-likelihoods); lm-eval's results JSON (without the per-sample records, with those metrics added
under `sluice_metrics`) as the artifact `lm_eval/results_<tasks>.json`.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import tempfile
import time
from pathlib import Path

from tasks.evaluation.lm_eval_results import task_metrics

LOCAL_TASKS_DIR = Path(__file__).resolve().parent.parent / "tasks" / "evaluation" / "lm_eval_tasks"
ARTIFACT_DIR = "lm_eval"
METRIC_PREFIX = "eval"
HUB_EXAMPLE = "hellaswag,arc_easy,piqa"
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_TASK_LINE = re.compile(r"^task:\s*(\S+)\s*$", re.MULTILINE)
_METRIC_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. :/]")


class UnknownTasks(ValueError):
    """Task names that neither lm-eval nor sluice's local tasks know."""


class TaskDataUnavailable(RuntimeError):
    """A hub task whose data could not be had (no network, nothing cached)."""


def local_task_names() -> list[str]:
    """The tasks defined under tasks/evaluation/lm_eval_tasks/ (their YAML's `task:`), without importing lm_eval."""
    return sorted(name for path in LOCAL_TASKS_DIR.rglob("*.yaml")
                  for name in _TASK_LINE.findall(path.read_text(encoding="utf-8")))


def evaluate_model(model_uri: str, task_names: list[str], limit: int | float | None = None, batch_size: int = 8,
                   device: str | None = None, num_fewshot: int | None = None, log_to_run: bool = True,
                   quiet: bool = True) -> dict:
    """Run lm-eval's tasks on the model's export; log the metrics and the results to the model's run. Returns
    `run_id`, `tasks` ({task: {metric: value}}, likelihood metrics included), `results` (lm-eval's, without
    samples) and `artifact` (the results' path in the run, None when not logged). Raises `UnknownTasks` before
    anything is exported when a name is unknown. `quiet`: lm-eval's warnings below errors are not shown (one per
    request whose context is cut to the model's length, for one)."""
    names = [name.strip() for name in task_names if name.strip()]
    if not names:
        raise UnknownTasks(f"no task named; the local task is {', '.join(local_task_names())}")
    if set(names) <= set(local_task_names()):
        for variable in OFFLINE_VARIABLES:          # before datasets / huggingface_hub read them at import
            os.environ.setdefault(variable, "1")
    task_manager = _task_manager(names)
    import mlflow

    from flows.hf_export import export_hf_checkpoint, source_run_id

    run_id = source_run_id(model_uri) if log_to_run else None
    with tempfile.TemporaryDirectory(prefix="sluice-eval-") as folder:
        export_hf_checkpoint(model_uri, folder, log_to_run=False)
        results = run_lm_eval(folder, names, task_manager, limit=limit, batch_size=batch_size, device=device,
                              num_fewshot=num_fewshot, quiet=quiet)
    metrics = task_metrics(results)
    results = {key: value for key, value in results.items() if key != "samples"} | {"sluice_metrics": metrics}
    artifact = None
    if run_id:
        client = mlflow.MlflowClient()
        now, model_id = int(time.time() * 1000), mlflow.models.get_model_info(model_uri).model_id
        client.log_batch(run_id, metrics=[mlflow.entities.Metric(metric_key(task, name), value, now, 0,
                                                                 model_id=model_id)
                                          for task, values in metrics.items() for name, value in values.items()])
        artifact = f"{ARTIFACT_DIR}/results_{_file_safe('_'.join(names))[:120]}.json"
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / Path(artifact).name
            path.write_text(json.dumps(results, indent=2, default=_plain))
            client.log_artifact(run_id, str(path), ARTIFACT_DIR)
    return {"run_id": run_id, "tasks": metrics, "results": results, "artifact": artifact}


def _task_manager(names: list[str]):
    """lm-eval's TaskManager over the local tasks, and over lm-eval's own (14k of them: ~8 s to index) only when a
    name is not local. Raises `UnknownTasks` for names neither knows: at once for a name no task file of lm-eval's
    holds (a typo), after indexing for the others."""
    from lm_eval.tasks import TaskManager

    local = set(local_task_names())
    only_local = set(names) <= local
    if absent := _in_no_lm_eval_task_file([name for name in names if name not in local]):
        raise _unknown(absent)
    manager = TaskManager(include_path=str(LOCAL_TASKS_DIR), include_defaults=not only_local)
    if unknown := [name for name in names if name not in manager.all_tasks]:
        raise _unknown(unknown)
    return manager


def _in_no_lm_eval_task_file(names: list[str]) -> list[str]:
    """The names that appear in none of lm-eval's task files (its tasks, groups and tags are all named in them), so
    its TaskManager cannot know them: reading the files takes a fraction of indexing them."""
    import lm_eval.tasks

    left = set(names)
    for path in Path(lm_eval.tasks.__file__).parent.rglob("*.yaml"):
        if not left:
            break
        text = path.read_text(encoding="utf-8", errors="replace")
        left = {name for name in left if name not in text}
    return [name for name in names if name in left]


def _unknown(names: list[str]) -> UnknownTasks:
    return UnknownTasks(
        f"unknown task(s) {', '.join(names)}: neither lm-evaluation-harness nor sluice's local tasks have "
        f"them. The local task (offline, from the shared data) is {', '.join(local_task_names())}; lm-eval's "
        f"own tasks are named as lm-eval names them (`lm_eval ls tasks`), e.g. --tasks {HUB_EXAMPLE}, and "
        "download their data from the Hugging Face Hub: run those with network access")


def run_lm_eval(checkpoint_dir: str | Path, names: list[str], task_manager=None, limit: int | float | None = None,
                batch_size: int = 8, device: str | None = None, num_fewshot: int | None = None,
                quiet: bool = True) -> dict:
    """lm-eval's `simple_evaluate` on a Hugging Face checkpoint folder, with per-sample records."""
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    task_manager = task_manager or _task_manager(names)
    try:
        with _lm_eval_errors_only() if quiet else contextlib.nullcontext():
            model = HFLM(pretrained=str(checkpoint_dir), device=device, batch_size=batch_size, dtype="float32")
            results = simple_evaluate(model=model, tasks=names, task_manager=task_manager, limit=limit,
                                      num_fewshot=num_fewshot, log_samples=True, bootstrap_iters=1000)
    except (ConnectionError, OSError) as error:
        hub = [name for name in names if name not in local_task_names()]
        if not hub:
            raise
        raise TaskDataUnavailable(
            f"the data of {', '.join(hub)} comes from the Hugging Face Hub and could not be had ({error}); run "
            f"with network access (and HF_HUB_OFFLINE / HF_DATASETS_OFFLINE unset), or with the data already in "
            f"the Hugging Face cache. Offline, the local task is {', '.join(local_task_names())}") from error
    return results


@contextlib.contextmanager
def _lm_eval_errors_only():
    logger = logging.getLogger("lm_eval")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def metric_key(task: str, metric: str) -> str:
    return _METRIC_NAME_UNSAFE.sub("_", f"{METRIC_PREFIX}/{task}/{metric}")


def _plain(value):
    """JSON for what lm-eval's results hold besides plain values (numpy numbers, dtypes, sets)."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, set):
        return sorted(value)
    return str(value)


def _file_safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)

