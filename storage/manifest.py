"""Stage manifests: the JSON record of what a stage produced, from what, with which config.

Manifests chain through `parents` (the input manifests' digests and locations), so any shard can be traced
back to the WARC files it came from.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

import fsspec

from storage.fs import atomic_output

MANIFEST_NAME = "manifest.json"


def sha256_file(url: str, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with fsspec.open(url, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class ShardEntry:
    path: str            # relative to the stage directory
    bytes: int
    sha256: str
    documents: int
    sources: list[str] = field(default_factory=list)     # the inputs this shard was made from

    @property
    def source(self) -> str:
        """The one input the shard was made from (a token shard: its document shard); an error for a merged one."""
        (source,) = self.sources
        return source


@dataclass
class Manifest:
    stage: str
    fingerprint: str
    config: dict
    code_version: str
    parents: list[dict]               # [{"stage", "digest", "location"}] or input-file identities
    shards: list[ShardEntry]
    stats: dict = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def digest(self) -> str:
        """Content identity: what was made and from what (not when), used in downstream fingerprints."""
        body = {"stage": self.stage, "fingerprint": self.fingerprint,
                "shards": [(s.path, s.sha256) for s in self.shards]}
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        raw = json.loads(text)
        raw["shards"] = [ShardEntry(**entry) for entry in raw["shards"]]
        return cls(**raw)

    def save(self, url: str) -> None:
        with atomic_output(url) as tmp, fsspec.open(tmp, "w") as handle:
            handle.write(self.to_json())

    @classmethod
    def load(cls, url: str) -> "Manifest":
        with fsspec.open(url, "r") as handle:
            return cls.from_json(handle.read())
