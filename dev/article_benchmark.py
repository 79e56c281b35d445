"""The Article Extraction Benchmark (scrapinghub/article-extraction-benchmark, MIT licence): 181 news and blog
article pages, each with its article body as gold text (the headline, bylines, related links and comments are not
part of it). A labelled set from outside the shared data, so never committed: it is read from a local copy of the
repository's `html/` and `ground-truth.json`, by default under benchmarks/_work/labelled/aeb:

    git -C <clone> archive HEAD html ground-truth.json LICENSE | tar -x -C benchmarks/_work/labelled/aeb

Scored by WCXB's word F1 (dev/wcxb.py) against the article body."""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from dev.gold_pages import Page, decode

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FOLDER = ROOT / "benchmarks" / "_work" / "labelled" / "aeb"


@dataclass
class ArticlePage(Page):
    """A page (`name`: its SHA-256 file name) with its gold article body; it has no snippets."""

    main_content: str


def load_article_benchmark(folder: Path = DEFAULT_FOLDER) -> list[ArticlePage]:
    """Every page of the local copy, in file-name order; an empty list when there is none."""
    truth = folder / "ground-truth.json"
    if not truth.exists():
        return []
    pages = []
    for name, gold in sorted(json.loads(truth.read_text(encoding="utf-8")).items()):
        html = decode(gzip.decompress((folder / "html" / f"{name}.html.gz").read_bytes()))
        pages.append(ArticlePage(name, html, gold.get("url") or "", [], [], gold.get("articleBody") or ""))
    return pages
