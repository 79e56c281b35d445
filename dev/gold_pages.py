"""Labelled HTML pages from the shared data: each page's markup and URL with the snippets its main text must hold
(`with`) and must not (`without`), whitespace-normalised. Read by the extraction benchmark and by the boilerplate
classifier's trainer."""
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
