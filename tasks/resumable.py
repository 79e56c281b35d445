"""Resumable task steps: a step that finished leaves a small JSON record beside its output, written last.

A rerun (a killed run started again, or Dask rescheduling a task whose worker died) finds the record and
returns it instead of redoing the work. Outputs are published by atomic rename before the record, so a
record never points at a half-written file.
"""
from __future__ import annotations

import json
from typing import Callable

import fsspec

from storage.fs import atomic_output


RECORD_SUFFIX = ".stats.json"


def shard_record_url(output_url: str) -> str:
    """Where a shard task's resume record sits: beside the shard it wrote."""
    return output_url + RECORD_SUFFIX


def run_once(record_url: str, compute: Callable[[], dict]) -> dict:
    """`compute()`'s result, recorded at `record_url`; `resumed` says whether it came from an earlier run."""
    fs, path = fsspec.core.url_to_fs(record_url)
    if fs.exists(path):
        with fsspec.open(record_url, "r") as handle:
            return json.load(handle) | {"resumed": True}
    result = compute()
    with atomic_output(record_url) as tmp, fsspec.open(tmp, "w") as handle:
        json.dump(result, handle)
    return result | {"resumed": False}
