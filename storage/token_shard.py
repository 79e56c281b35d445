"""Token shards: a `.bin` of little-endian token ids behind a fixed header, plus a `.idx` of document offsets.

Layout of `<name>.bin` (all little-endian):
    bytes 0-7    magic  b"SLUICETK"
    bytes 8-11   uint32 format version (1)
    bytes 12-15  uint32 bytes per token (2 = uint16, 4 = uint32)
    bytes 16-23  uint64 number of tokens
    bytes 24-31  uint64 number of documents
    bytes 32-    the tokens
`<name>.idx` holds int64 offsets (in tokens) of every document start plus the end: n_docs + 1 values,
so document i is tokens[idx[i]:idx[i+1]]. Both files are memory-mappable with numpy.
"""
from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import numpy as np

from storage.fs import atomic_output

MAGIC = b"SLUICETK"
FORMAT_VERSION = 1
HEADER = struct.Struct("<8sIIQQ")
UINT16_VOCAB_LIMIT = 1 << 16


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 while every id fits (vocab <= 65,536), else uint32."""
    if vocab_size <= 0:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    return np.dtype("<u2") if vocab_size <= UINT16_VOCAB_LIMIT else np.dtype("<u4")


def _shard_files(base: Path) -> tuple[Path, Path]:
    """`<base>.bin` and `<base>.idx`, appended (not with_suffix, which would turn `train.00001` into `train.bin`)."""
    return Path(f"{base}.bin"), Path(f"{base}.idx")


def token_shard_sha256(base: str | Path) -> str:
    """One digest over a shard's `.bin` then `.idx`: how a manifest names a token shard's content."""
    digest = hashlib.sha256()
    for path in _shard_files(Path(base)):
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


class TokenShardWriter:
    """Collects documents of token ids and writes `<path>.bin` / `<path>.idx` atomically on close()."""

    def __init__(self, path: str | Path, vocab_size: int):
        self.path = Path(path)
        self.dtype = token_dtype(vocab_size)
        self.vocab_size = vocab_size
        self._chunks: list[np.ndarray] = []
        self._offsets = [0]

    def add_document(self, tokens) -> None:
        array = np.asarray(tokens)
        if array.size and (array.min() < 0 or array.max() >= self.vocab_size):
            raise ValueError(f"token id out of range [0, {self.vocab_size}) in document {len(self._offsets) - 1}")
        self._chunks.append(array.astype(self.dtype, copy=False))
        self._offsets.append(self._offsets[-1] + int(array.size))

    def close(self) -> tuple[Path, Path]:
        tokens = np.concatenate(self._chunks) if self._chunks else np.zeros(0, self.dtype)
        header = HEADER.pack(MAGIC, FORMAT_VERSION, self.dtype.itemsize, tokens.size, len(self._offsets) - 1)
        bin_path, idx_path = _shard_files(self.path)
        # .bin first, .idx last: a reader opens a shard through its .idx, so a shard is complete once both exist.
        with atomic_output(str(bin_path)) as tmp, open(tmp, "wb") as handle:
            handle.write(header)
            handle.write(tokens.tobytes())
        with atomic_output(str(idx_path)) as tmp, open(tmp, "wb") as handle:
            handle.write(np.asarray(self._offsets, dtype="<i8").tobytes())
        return bin_path, idx_path


class TokenShard:
    """Read-only, memory-mapped view of one token shard."""

    def __init__(self, path: str | Path):
        base = Path(path)
        bin_path, idx_path = _shard_files(base)
        with open(bin_path, "rb") as handle:
            raw = handle.read(HEADER.size)
        if len(raw) < HEADER.size:
            raise ValueError(f"{bin_path}: file shorter than the {HEADER.size}-byte token-shard header")
        magic, version, itemsize, n_tokens, n_docs = HEADER.unpack(raw)
        if magic != MAGIC:
            raise ValueError(f"{bin_path}: not a sluice token shard (magic {magic!r}, expected {MAGIC!r})")
        if version != FORMAT_VERSION:
            raise ValueError(f"{bin_path}: token-shard format version {version}, this reader knows {FORMAT_VERSION}")
        if itemsize not in (2, 4):
            raise ValueError(f"{bin_path}: unsupported token width {itemsize} bytes")
        expected = HEADER.size + n_tokens * itemsize
        if bin_path.stat().st_size != expected:
            raise ValueError(f"{bin_path}: {bin_path.stat().st_size} bytes on disk, header promises {expected}")
        self.tokens = np.memmap(bin_path, dtype=np.dtype(f"<u{itemsize}"), mode="r",
                                offset=HEADER.size, shape=(n_tokens,))
        self.offsets = np.memmap(idx_path, dtype="<i8", mode="r")
        if self.offsets.size != n_docs + 1 or int(self.offsets[-1]) != n_tokens:
            raise ValueError(f"{idx_path}: offsets do not match the header of {bin_path} "
                             f"({self.offsets.size} offsets for {n_docs} documents)")

    def __len__(self) -> int:
        return self.offsets.size - 1

    @property
    def num_tokens(self) -> int:
        return int(self.tokens.size)

    def document(self, i: int) -> np.ndarray:
        return self.tokens[self.offsets[i]:self.offsets[i + 1]]
