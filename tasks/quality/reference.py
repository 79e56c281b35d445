"""Reference text (the "good" side): files under the configured paths, read as lines of UTF-8."""
from __future__ import annotations

import glob
import os

from tasks.errors import TooLittleData
from tasks.evaluation.ngrams import NgramSet

TEXT_SUFFIXES = (".txt", ".raw")


class ReferenceTooSmall(TooLittleData):
    """Not enough reference text to train a model on."""


def reference_files(paths: list[str], suffixes: tuple[str, ...] = TEXT_SUFFIXES) -> list[str]:
    """Files under `paths` (files, directories or globs; in directories, those ending in `suffixes`), sorted;
    READMEs are not reference text."""
    found: set[str] = set()
    for pattern in paths:
        for path in glob.glob(pattern) or [pattern]:
            if os.path.isdir(path):
                found.update(os.path.join(root, name) for root, _, names in os.walk(path) for name in names
                             if name.endswith(suffixes) and not name.upper().startswith("README"))
            elif os.path.isfile(path):
                found.add(path)
            else:
                raise FileNotFoundError(f"reference path {path} does not exist")
    return sorted(found)


def read_reference(paths: list[str], min_chars: int, what: str) -> list[str]:
    """Non-empty lines of the reference files; refuses fewer than `min_chars` characters in all."""
    lines: list[str] = []
    for path in reference_files(paths):
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines.extend(line.strip() for line in handle if line.strip())
    chars = sum(len(line) for line in lines)
    if chars < min_chars:
        raise ReferenceTooSmall(f"{what}: {chars:,} characters of reference text in {paths}; at least "
                                f"{min_chars:,} are needed (add text or lower min_reference_chars)")
    return lines


def without_heldout(lines: list[str], heldout_ngrams: str | None) -> tuple[list[str], int]:
    """The lines that share no n-gram with the held-out evaluation text, read as one text (so an n-gram across a
    line end counts), and how many were left out. Leaving lines out makes new neighbours: repeat until none
    shares one."""
    if not heldout_ngrams:
        return lines, 0
    heldout = NgramSet.load(heldout_ngrams)
    kept = lines
    while touched := heldout.lines_sharing(kept):
        kept = [line for index, line in enumerate(kept) if index not in touched]
    return kept, len(lines) - len(kept)
