"""A sluice token shard (storage/token_shard.py) as a Megatron indexed dataset: `<prefix>.bin` (the token ids, no
header) and `<prefix>.idx` (megatron-core's `MMIDIDX` index: dtype, sequence lengths, byte pointers, document
boundaries), the pair that megatron-core's `IndexedDataset` reads, and with it Megatron-LM, NeMo and GPT-NeoX.
One document is one sequence. The token bytes are the shard's own: uint16 ids stay uint16; uint32 ids (vocabularies
over 65,536) are written as int32, which Megatron reads and whose bytes are the same while ids stay below 2**31."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np

from storage.fs import atomic_output
from storage.manifest import Manifest
from storage.token_shard import HEADER, TokenShard

INDEX_HEADER = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
DTYPE_CODES = {2: 8, 4: 4}          # token bytes -> megatron-core's DType code: uint16, int32


def write_megatron(shard_base: str | Path, prefix: str | Path) -> tuple[Path, Path]:
    """Write the token shard `<shard_base>.bin/.idx` as `<prefix>.bin` / `<prefix>.idx`, the index last."""
    shard = TokenShard(shard_base)
    itemsize = shard.tokens.dtype.itemsize
    if itemsize == 4 and shard.num_tokens and int(shard.tokens.max()) >= 1 << 31:
        raise ValueError(f"{shard_base}: token ids of 2**31 and above have no Megatron dtype")
    bin_path, idx_path = Path(f"{prefix}.bin"), Path(f"{prefix}.idx")
    with open(f"{shard_base}.bin", "rb") as source, atomic_output(str(bin_path)) as tmp, open(tmp, "wb") as target:
        source.seek(HEADER.size)
        shutil.copyfileobj(source, target, 1 << 20)
    offsets = np.asarray(shard.offsets, dtype=np.int64)
    documents = len(shard)
    with atomic_output(str(idx_path)) as tmp, open(tmp, "wb") as handle:
        handle.write(INDEX_HEADER + struct.pack("<QBQQ", INDEX_VERSION, DTYPE_CODES[itemsize], documents,
                                                documents + 1))
        handle.write(np.diff(offsets).astype(np.int32).tobytes())              # sequence lengths
        handle.write((offsets[:-1] * itemsize).astype(np.int64).tobytes())     # sequence byte pointers
        handle.write(np.arange(documents + 1, dtype=np.int64).tobytes())       # document boundaries
    return bin_path, idx_path


TOKEN_STAGES = ("tokenize", "mixture")


def export_token_stage(manifest_url: str, out_dir: str | Path) -> list[Path]:
    """Every token shard of a `tokenize` or `mixture` stage (its manifest) as a Megatron pair under `out_dir`, at
    the shard's own relative path (`shards/<name>`, `train.000`, `validation.000`); the `.idx` paths, in order.
    The store must be local (the shards are memory-mapped)."""
    manifest = Manifest.load(manifest_url)
    if manifest.stage not in TOKEN_STAGES:
        raise ValueError(f"{manifest_url}: a {manifest.stage} stage; only {' and '.join(TOKEN_STAGES)} stages hold "
                         "token shards")
    folder = manifest_url.rsplit("/", 1)[0]
    written = []
    for entry in manifest.shards:
        prefix = Path(out_dir) / entry.path
        prefix.parent.mkdir(parents=True, exist_ok=True)
        written.append(write_megatron(f"{folder}/{entry.path}", prefix)[1])
    return written
