"""numpy arrays (.npy, or named ones in one .npz) on any fsspec URL: published atomically, memory-mapped when the
file is local (.npy)."""
from __future__ import annotations

import io

import fsspec
import numpy as np
from fsspec.implementations.local import LocalFileSystem

from storage.fs import atomic_output


def save_array(array: np.ndarray, url: str) -> None:
    with atomic_output(url) as tmp, fsspec.open(tmp, "wb") as handle:
        np.save(handle, array)


def load_array(url: str, mmap: bool = False) -> np.ndarray:
    """The array at `url`; with `mmap`, a local file is mapped (rows are read when touched), a remote one read."""
    fs, path = fsspec.core.url_to_fs(url)
    if mmap and isinstance(fs, LocalFileSystem):
        return np.load(path, mmap_mode="r")
    with fsspec.open(url, "rb") as handle:
        return np.load(io.BytesIO(handle.read()))


def save_arrays(arrays: dict[str, np.ndarray], url: str, compressed: bool = True) -> None:
    """Named arrays in one .npz file, compressed unless told otherwise."""
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    with atomic_output(url) as tmp, fsspec.open(tmp, "wb") as handle:
        handle.write(buffer.getvalue())


def load_arrays(url: str) -> dict[str, np.ndarray]:
    with fsspec.open(url, "rb") as handle, np.load(io.BytesIO(handle.read())) as arrays:
        return {name: arrays[name] for name in arrays.files}
