"""The mixture's Prefect task: one for the whole mixture, run in the flow process, whose passes fan out to the
stage's cluster (they read token counts and copy the drawn documents' tokens, never texts)."""
from __future__ import annotations

from prefect import task

from configs.mixture import MixtureConfig
from tasks.mixture.mix import mix
from tasks.resumable import run_once


@task(name="mix", retries=1, retry_delay_seconds=2)
def mix_task(pairs: list[tuple[str, str]], out_dir: str, vocab_size: int, config: MixtureConfig) -> dict:
    return run_once(f"{out_dir}/mixture.json", lambda: mix(pairs, out_dir, vocab_size, config))
