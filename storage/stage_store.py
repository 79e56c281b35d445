"""The content-addressed stage store: `<store>/<stage>/<fingerprint>/` holds one stage run's outputs.

The fingerprint hashes the stage name, its config, the input identity and the stage's code version, so the
same inputs map to the same directory. A stage is done exactly when its manifest exists; shards are
published by atomic rename before it and the manifest is written last.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from fsspec.core import url_to_fs

from storage.manifest import MANIFEST_NAME, Manifest, canonical_json

FINGERPRINT_LENGTH = 16


def stage_fingerprint(stage: str, config: dict, inputs: object, code_version: str) -> str:
    payload = canonical_json({"stage": stage, "config": config, "inputs": inputs, "code": code_version})
    return hashlib.sha256(payload.encode()).hexdigest()[:FINGERPRINT_LENGTH]


def source_digest(*packages: str) -> str:
    """Code version of a stage: a hash of its modules' source, so editing the logic invalidates old outputs.

    Each name is a package (all its modules) or a single module."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in packages:
        location = root / package.replace(".", "/")
        module = location.with_suffix(".py")
        sources = [module] if module.is_file() else sorted(location.rglob("*.py"))
        if not sources:
            raise FileNotFoundError(f"source_digest: no module or package named {package!r} under {root}")
        for source in sources:
            digest.update(source.relative_to(root).as_posix().encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()[:FINGERPRINT_LENGTH]


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
