"""The extraction stage's Prefect task: one WARC shard per task run. Kept apart from the flows so a Dask worker
that runs it imports Prefect's task engine and the extraction code, not MLflow or the flow modules."""
from __future__ import annotations

from prefect import get_run_logger, task

from configs.schema import ExtractConfig
from tasks.extract.shard import ShardJob, extract_shard


@task(name="extract-shard", retries=1, retry_delay_seconds=2, task_run_name="extract {job.warc_name}")
def extract_shard_task(job: ShardJob, config: ExtractConfig) -> dict:
    return extract_shard(job, config, get_run_logger())
