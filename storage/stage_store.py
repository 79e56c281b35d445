"""The content-addressed stage store: `<store>/<stage>/<fingerprint>/` holds one stage run's outputs.

The fingerprint hashes the stage name, its config, the input identity and the stage's code version, so the
same inputs map to the same directory. A stage is done exactly when its manifest exists; shards are
published by atomic rename before it and the manifest is written last.
"""
from __future__ import annotations

import hashlib

from fsspec.core import url_to_fs

from storage.manifest import MANIFEST_NAME, Manifest, canonical_json

FINGERPRINT_LENGTH = 16


def stage_fingerprint(stage: str, config: dict, inputs: object, code_version: str) -> str:
    payload = canonical_json({"stage": stage, "config": config, "inputs": inputs, "code": code_version})
    return hashlib.sha256(payload.encode()).hexdigest()[:FINGERPRINT_LENGTH]


class StageStore:
    def __init__(self, root: str):
        self.root = root.rstrip("/")

    def stage_dir(self, stage: str, fingerprint: str) -> str:
        return f"{self.root}/{stage}/{fingerprint}"

    def manifest_url(self, stage: str, fingerprint: str) -> str:
        return f"{self.stage_dir(stage, fingerprint)}/{MANIFEST_NAME}"

    def find(self, stage: str, fingerprint: str) -> Manifest | None:
        """The finished stage's manifest, or None when the stage has not completed."""
        url = self.manifest_url(stage, fingerprint)
        fs, path = url_to_fs(url)
        return Manifest.load(url) if fs.exists(path) else None

    def publish(self, manifest: Manifest) -> str:
        url = self.manifest_url(manifest.stage, manifest.fingerprint)
        manifest.save(url)
        return url
