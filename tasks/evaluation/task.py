"""The evaluation stages' work: building the suite (the stage makes it a Prefect task) and decontaminating (one plain Dask call
per shard, from the stage's step)."""
from __future__ import annotations

from configs.evaluation import EvalSuiteConfig
from tasks.evaluation.decontaminate import DecontaminateJob, decontaminate_shard
from tasks.evaluation.suite import build_suite
from tasks.resumable import run_once


def build_suite_call(config: EvalSuiteConfig, out_dir: str, lid_model: str | None) -> dict:
    return build_suite(config, out_dir, lid_model)


def decontaminate_shard_task(job: DecontaminateJob) -> dict:
    return run_once(job.output_url + ".json", lambda: decontaminate_shard(job))
