"""Common Crawl input: a crawl's `warc.paths.gz` listing (one relative path per line, as Common Crawl publishes
one per crawl, for WARC, WET and WAT files) joined onto a base URL, cut to the first `limit` files or a seeded
random `sample` of them. The listing and the files are read through fsspec, so an `https://` or `s3://` base
works as a local directory does; `storage_options` (e.g. `anon: true`) go to both."""
from __future__ import annotations

import gzip
import random

from fsspec.core import url_to_fs

from configs.schema import InputConfig
from storage.fs import expand_inputs, local_path


def read_listing(url: str, storage_options: dict | None = None) -> list[str]:
    """The non-blank lines of a listing, gzipped (by its `.gz` name) or plain."""
    fs, path = url_to_fs(url, **(storage_options or {}))
    if not fs.exists(path):
        raise FileNotFoundError(f"listing {url!r} does not exist")
    with fs.open(path, "rb") as handle:
        raw = handle.read()
    text = gzip.decompress(raw) if path.endswith(".gz") else raw
    lines = [line.strip() for line in text.decode("utf-8").splitlines()]
    listed = [line for line in lines if line and not line.startswith("#")]
    if not listed:
        raise ValueError(f"listing {url!r} lists no files")
    return listed


def choose(listed: list[str], limit: int | None, sample: int | None, seed: int) -> list[str]:
    """The first `limit` entries, or `sample` entries drawn with `seed` (kept in listing order); all otherwise."""
    if sample is not None:
        picked = set(random.Random(seed).sample(range(len(listed)), min(sample, len(listed))))
        return [entry for index, entry in enumerate(listed) if index in picked]
    return listed[:limit] if limit is not None else listed


def join_base(base_url: str, relative: str) -> str:
    """`relative` under `base_url`; a local base becomes an absolute path (Dask workers may run elsewhere)."""
    joined = f"{base_url.rstrip('/')}/{relative.lstrip('/')}"
    return local_path(joined) if "://" not in base_url else joined


def listed_inputs(url: str, base_url: str, limit: int | None = None, sample: int | None = None, seed: int = 0,
                  storage_options: dict | None = None) -> list[str]:
    return [join_base(base_url, entry) for entry in choose(read_listing(url, storage_options), limit, sample, seed)]


def input_urls(inputs: InputConfig) -> list[str]:
    """A recipe's input files, as fsspec URLs (local files as absolute paths): its paths expanded, or its listing's
    chosen files."""
    if inputs.listing is None:
        return expand_inputs(inputs.paths, storage_options=inputs.storage_options)
    listing = inputs.listing
    return listed_inputs(listing.url, listing.base_url, listing.limit, listing.sample, listing.seed,
                         inputs.storage_options)
