"""Labelled HTML pages from the shared data: each page's markup and URL with the snippets its main text must hold
(`with`) and must not (`without`), whitespace-normalised, and how an extraction is scored against them. Read by the
extraction benchmark, its regression test and the trainers of the boilerplate classifier and the block selector."""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from resiliparse.parse.encoding import bytes_to_str, detect_encoding


@dataclass
class Page:
    name: str
    html: str
    url: str
    with_snippets: list[str]
    without_snippets: list[str]


def normalise(text: str) -> str:
    return " ".join(text.split())


def found(page: Page, text: str) -> tuple[int, int]:
    """The page's `with` and `without` snippets found in `text`."""
    text = normalise(text)
    return (sum(snippet in text for snippet in page.with_snippets),
            sum(snippet in text for snippet in page.without_snippets))


def score(pages: list[Page], texts: list[str], parity: int | None = None) -> dict:
    """`with` recall and `without` leak, snippets pooled over the pages (only the even or odd ones by `parity`)."""
    found_with = total_with = found_without = total_without = 0
    for index, (page, text) in enumerate(zip(pages, texts)):
        if parity is not None and index % 2 != parity:
            continue
        page_with, page_without = found(page, text)
        found_with += page_with
        found_without += page_without
        total_with += len(page.with_snippets)
        total_without += len(page.without_snippets)
    return {"recall": found_with / max(1, total_with), "leak": found_without / max(1, total_without),
            "with_snippets": total_with, "without_snippets": total_without}


def decode(raw: bytes) -> str:
    return bytes_to_str(raw, detect_encoding(raw))


def load_trafilatura_eval(folder: Path) -> list[Page]:
    pages = []
    with open(folder / "manifest.jsonl", encoding="utf-8") as manifest:
        for line in manifest:
            entry = json.loads(line)
            html = decode(gzip.decompress((folder / entry["file"]).read_bytes()))
            pages.append(Page(entry["file"], html, entry["url"], [normalise(s) for s in entry["with"]],
                              [normalise(s) for s in entry["without"]]))
    return pages
