"""The mixture's Prefect task: one for the whole mixture, run in the flow process, whose passes fan out to the
stage's cluster (they read token counts and copy the drawn documents' tokens, never texts)."""
from __future__ import annotations

from collections.abc import Callable

from prefect import task
from prefect.cache_policies import NO_CACHE

from configs.mixture import MixtureConfig
from tasks.mixture.mix import mix
from tasks.resumable import run_once


# No Prefect cache key: `planned` is a closure Prefect cannot hash, and a rerun resumes from the record anyway.
@task(name="mix", retries=1, retry_delay_seconds=2, cache_policy=NO_CACHE)
def mix_task(pairs: list[tuple[str, str]], out_dir: str, vocab_size: int, config: MixtureConfig,
             planned: Callable[[list[dict]], None] | None = None) -> dict:
    return run_once(f"{out_dir}/mixture.json", lambda: mix(pairs, out_dir, vocab_size, config, planned))
