"""The mixture's call: one for the whole mixture (the stage makes it a Prefect task), run in the flow process, whose passes fan out to the
stage's cluster (they read token counts and copy the drawn documents' tokens, never texts)."""
from __future__ import annotations

from collections.abc import Callable

from configs.mixture import MixtureConfig
from tasks.mixture.mix import mix
from tasks.resumable import run_once


def mix_call(pairs: list[tuple[str, str]], out_dir: str, vocab_size: int, config: MixtureConfig,
             planned: Callable[[list[dict]], None] | None = None) -> dict:
    return run_once(f"{out_dir}/mixture.json", lambda: mix(pairs, out_dir, vocab_size, config, planned))
