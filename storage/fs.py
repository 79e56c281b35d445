"""fsspec helpers: resolve inputs (files, directories, globs, URLs) and publish files atomically."""
from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from typing import Iterator

from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

WARC_SUFFIXES = (".warc", ".warc.gz", ".warc.lz4", ".warc.zst", ".wet", ".wet.gz", ".arc", ".arc.gz")


def expand_inputs(patterns: list[str], suffixes: tuple[str, ...] = WARC_SUFFIXES,
                  storage_options: dict | None = None) -> list[str]:
    """Turn files, directories and globs into a sorted, de-duplicated list of fsspec URLs.

    A directory is searched recursively for files with one of `suffixes`; an explicit file or glob match
    is taken whatever its name. Raises FileNotFoundError naming each pattern that matched nothing.
    """
    found: set[str] = set()
    for pattern in patterns:
        fs, path = url_to_fs(pattern, **(storage_options or {}))
        if fs.isdir(path):
            matches = [p for p in fs.find(path) if p.endswith(suffixes)]
        elif any(ch in path for ch in "*?["):
            matches = [p for p in fs.glob(path) if fs.isfile(p)]
        elif fs.exists(path):
            matches = [path]
        else:
            raise FileNotFoundError(f"input {pattern!r} does not exist")
        if not matches:
            raise FileNotFoundError(f"input pattern {pattern!r} matched no WARC/WET/ARC files "
                                    f"(looked for {', '.join(suffixes)} under directories)")
        found.update(_as_url(fs, p) for p in matches)
    return sorted(found)


def _as_url(fs, path: str) -> str:
    """Local files stay plain paths; anything else keeps its protocol so workers can open it."""
    return path if isinstance(fs, LocalFileSystem) else fs.unstrip_protocol(path)


def file_fingerprint(url: str, storage_options: dict | None = None) -> dict:
    """Cheap identity of an input file (size + modification time or ETag), used in stage fingerprints."""
    fs, path = url_to_fs(url, **(storage_options or {}))
    info = fs.info(path)
    marker = info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("LastModified") or ""
    return {"url": url, "size": int(info.get("size") or 0), "marker": str(marker)}


@contextmanager
def atomic_output(url: str) -> Iterator[str]:
    """Yield a temporary URL beside `url`; on success it is renamed onto `url`, on error removed.

    Readers therefore never see a half-written file: a killed writer leaves only a `.tmp-*` file,
    which nothing trusts.
    """
    fs, path = url_to_fs(url)
    parent = os.path.dirname(path)
    fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent}/.tmp-{uuid.uuid4().hex}-{os.path.basename(path)}"
    try:
        yield _as_url(fs, tmp)
        fs.mv(tmp, path)
    except BaseException:
        if fs.exists(tmp):
            fs.rm(tmp)
        raise


def remove_folder(url: str) -> dict[str, int]:
    """Remove the folder `url` and everything under it; returns the bytes and files it held (a stage's work/
    folder: what its steps shuffled through storage)."""
    fs, path = url_to_fs(url)
    files = [info for info in fs.find(path, detail=True).values() if info.get("type") == "file"]
    fs.rm(path, recursive=True)
    return {"bytes": sum(int(info.get("size") or 0) for info in files), "files": len(files)}


def local_path(url: str) -> str:
    """Local paths become absolute (Dask workers may run in another directory); other URLs are left alone."""
    fs, path = url_to_fs(url)
    return os.path.abspath(path) if isinstance(fs, LocalFileSystem) else url
