"""A recipe checked against this machine before any service starts: what can be known without computing. The input
files, the data files the recipe names (`{data_dir}` paths, a given language-ID model), mixture sources that can
never select a document, and a training run that cannot fit its device or reach its nodes. Each problem is one line
naming the field, the value and what to do; all of them are raised together as one RecipeError, which a command
reports as it reports a recipe's own errors (exit status 2)."""
from __future__ import annotations

import glob
import os
import zlib
from collections.abc import Iterator

import fsspec

from configs.parsing import RecipeError
from configs.schema import Recipe
from flows.dask_tls import client_tls_problems
from flows.training_nodes import dask_address
from storage.document_shard import DOCUMENT_SCHEMA
from storage.fs import expand_inputs
from storage.locations import expand_data_dir
from tasks.extract.records import SNIFF_BYTES, archive_kind

GZIP_MAGIC = b"\x1f\x8b"
REMOTE_TIMEOUT_S = 20          # a remote input's one metadata request
# Columns the stages add to the documents, which a mixture's `where` may select by, and the section that adds each.
ADDED_COLUMNS = {"dup_cluster": "dedup", "dup_cluster_size": "dedup", "kenlm_bucket": "quality",
                 "topic": "domains", "format": "domains"}


def preflight(recipe: Recipe, origin: str) -> None:
    """Raise a RecipeError listing every problem found, or return."""
    found = [*_input_problems(recipe), *_data_file_problems(recipe), *_mixture_problems(recipe),
             *client_tls_problems(recipe.dask.address, "dask.address"), *_training_problems(recipe)]
    if found:
        raise RecipeError(f"{origin}: the recipe cannot run on this machine:\n" + "\n".join(f"  {line}" for line in found))


def _input_problems(recipe: Recipe) -> Iterator[str]:
    for index, pattern in enumerate(recipe.input.paths):
        if _remote(pattern) and not any(char in pattern for char in "*?[") and \
                (problem := remote_problem(pattern, recipe.input.storage_options)):
            yield f"input.paths[{index}]: {problem}"
            continue
        try:
            matched = expand_inputs([pattern], storage_options=recipe.input.storage_options)
        except FileNotFoundError as error:
            yield f"input.paths[{index}]: {error}: give an existing file, folder or glob"
            continue
        except Exception as error:          # a remote store that refuses, a protocol whose package is missing
            yield f"input.paths[{index}]: {pattern!r} cannot be listed: {type(error).__name__}: {error}"
            continue
        local = [path for path in matched if "://" not in path]
        unreadable = [path for path in local if not os.access(path, os.R_OK)]
        if unreadable:
            yield (f"input.paths[{index}]: {len(unreadable)} of its {len(matched)} files cannot be read (first: "
                   f"{unreadable[0]}): fix their permissions or leave them out")
        elif local and len(local) == len(matched) and not any(map(_starts_like_warc, local)):
            yield (f"input.paths[{index}]: none of its {len(matched)} files starts like a WARC, WET or ARC file "
                   f"(first: {matched[0]}): give Common Crawl WARC files (.warc.gz, .warc)")
    listing = recipe.input.listing
    if listing is None:
        return
    if not _remote(listing.url):
        if not os.path.exists(listing.url):
            yield f"input.listing.url: {listing.url} does not exist: give the path of a warc.paths.gz listing"
    elif problem := remote_problem(listing.url, recipe.input.storage_options):
        yield f"input.listing.url: {problem}"


def _remote(url: str) -> bool:
    return "://" in url and not url.startswith("file://")


def remote_problem(url: str, storage_options: dict) -> str | None:
    """What stops this machine reading a remote file, found with one request (its metadata): unreachable (the
    network error), missing, or forbidden; None when it can be read."""
    options = dict(storage_options)
    protocol = url.split("://", 1)[0]
    if protocol in ("http", "https") and "client_kwargs" not in options:
        import aiohttp

        options["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(total=REMOTE_TIMEOUT_S)}
    try:
        fs, path = fsspec.core.url_to_fs(url, **options)
        fs.info(path)
    except ImportError as error:
        return f"{url}: no package reads {protocol}:// ({error})"
    except Exception as error:
        # fsspec's HTTP store raises FileNotFoundError for any failure, the cause (aiohttp's) chained to it
        cause = error.__cause__ if isinstance(error, FileNotFoundError) and error.__cause__ else error
        status = getattr(cause, "status", None)
        if isinstance(cause, PermissionError) or status in (401, 403):
            return (f"{url} is forbidden to this machine{f' (HTTP {status})' if status else ''}: check the address "
                    f"and storage_options' credentials")
        if isinstance(cause, FileNotFoundError) or status == 404:
            return f"{url} does not exist{' (HTTP 404)' if status else ''}: check the address"
        why = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        return f"{url} cannot be reached from this machine ({why}): check the network, or use a local copy"
    return None


def _starts_like_warc(path: str) -> bool:
    """The file's first bytes are what the extraction reads (WARC plain, gzip, lz4 or zstd; ARC): a file that is
    not is skipped by it as unreadable, and a run of only such files has nothing to extract."""
    with fsspec.open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if head.startswith(GZIP_MAGIC):     # the extraction tries any gzip; here its content must be WARC or ARC
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head)
        except zlib.error:
            return False
        return archive_kind(head) in ("plain", "arc")
    return archive_kind(head) != "unreadable"


def _data_file_problems(recipe: Recipe) -> Iterator[str]:
    """Every `{data_dir}` path of a section the run uses, and an explicitly given language-ID model."""
    for field, path in _data_dir_paths(recipe.model_dump(mode="json", exclude={"train"}), ""):
        try:
            resolved = expand_data_dir(path, recipe.data_dir)
        except FileNotFoundError as error:
            yield f"data_dir: {error}"
            break
        if not (glob.glob(resolved) if glob.has_magic(resolved) else os.path.exists(resolved)):
            yield (f"{field}: {path} is {resolved}, which does not exist: set data_dir (or SLUICE_DATA_DIR) to the "
                   f"shared data folder, or give another path")
    model = recipe.extract.langid.model_path
    if model and not os.path.isfile(model):
        yield f"extract.langid.model_path: {model} does not exist: give a fastText lid.176 model, or leave it unset"


def _data_dir_paths(value, field: str) -> Iterator[tuple[str, str]]:
    """(field, path) for each string with `{data_dir}` in it, skipping sections switched off (`enabled: false`)."""
    if isinstance(value, dict):
        if value.get("enabled") is False:
            return
        for key, item in value.items():
            yield from _data_dir_paths(item, f"{field}.{key}" if field else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _data_dir_paths(item, f"{field}[{index}]")
    elif isinstance(value, str) and "{data_dir}" in value:
        yield field, value


def _mixture_problems(recipe: Recipe) -> Iterator[str]:
    """Sources whose `where` no extracted document can meet."""
    if not recipe.mixture.enabled:
        return
    kept_languages = set(recipe.extract.langid.languages)
    for index, source in enumerate(recipe.mixture.sources):
        field = f"mixture.sources[{index}] ({source.name!r}).where"
        for column, allowed in source.where.items():
            if column not in DOCUMENT_SCHEMA.names and column not in ADDED_COLUMNS:
                yield (f"{field}: {column!r} is not a document column "
                       f"({', '.join([*DOCUMENT_SCHEMA.names, *ADDED_COLUMNS])})")
            elif column in ADDED_COLUMNS and not getattr(recipe, ADDED_COLUMNS[column]).enabled:
                yield f"{field}: {column!r} is added by the {ADDED_COLUMNS[column]} stage, which the recipe turns off"
            elif column == "lang" and kept_languages and not kept_languages & set(allowed):
                yield (f"{field}: lang {allowed}, but extract.langid.languages keeps only {sorted(kept_languages)}: "
                       f"add the language there, or change the source")
            elif column == "source" and recipe.input.source not in allowed:
                yield (f"{field}: source {allowed}, but every document's source is input.source "
                       f"{recipe.input.source!r}")


def _training_problems(recipe: Recipe) -> Iterator[str]:
    train = recipe.train
    if not train.enabled:
        return
    if train.hardware.nodes > 1:
        try:
            yield from client_tls_problems(dask_address(train), "train.hardware.dask_address")
        except ValueError as error:
            yield f"train.{error}"
    from training.plan import PlanRefused, check_fits, plan

    try:
        check_fits(plan(recipe.sized_training()))
    except PlanRefused as error:
        yield f"train: {error}: a smaller micro_batch_size, activation checkpointing or more data-parallel ranks"
