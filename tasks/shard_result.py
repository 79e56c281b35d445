"""What every shard task reports: where it read and wrote, the output's size and digest, and its stats. The
stage runner turns it into the manifest's shard entry; it travels as a plain dict (a Prefect task result and
the shard's resume record), built and read only here."""
from __future__ import annotations

import os
from dataclasses import dataclass

from storage.manifest import ShardEntry
from tasks.stats import StageStats

LOCATION_KEYS = ("inputs", "output", "output_bytes", "output_sha256")


@dataclass(frozen=True)
class ShardResult:
    inputs: tuple[str, ...]   # the shards it read (the quality filter merges runs of small ones)
    output: str           # the file (or token shard base) it wrote
    output_bytes: int
    output_sha256: str
    stats: StageStats

    def to_dict(self, **extra) -> dict:
        """The stats' keys, the location keys and any stage-specific `extra` (funnel, examples), flat."""
        return self.stats.to_dict() | {key: getattr(self, key) for key in LOCATION_KEYS} | extra

    @classmethod
    def from_dict(cls, raw: dict) -> "ShardResult":
        return cls(**{key: raw[key] for key in LOCATION_KEYS} | {"inputs": tuple(raw["inputs"])},
                   stats=StageStats.from_dict(raw))

    def manifest_entry(self, stage_dir: str) -> ShardEntry:
        return ShardEntry(path=os.path.relpath(self.output, stage_dir), bytes=self.output_bytes,
                          sha256=self.output_sha256, documents=self.stats.documents_out, sources=list(self.inputs))
