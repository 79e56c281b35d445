"""Extraction quality of the HTML-to-text step, and of the dedup stage's corpus-level repeated-paragraph removal
on its output, against gold data.

    cd /work/main && .venv/bin/python benchmarks/extraction_quality.py [--data-dir DIR] \
        [--out benchmarks/results/extraction_quality.json] [--repeats 2] [--rows WORDS] [--skip-grid] \
        [--articles benchmarks/_work/labelled/aeb]
    cd /work/main && .venv/bin/python benchmarks/extraction_quality.py --wcxb-only \
        [--out benchmarks/results/extraction_wcxb.json]

Writes the JSON of all figures and regenerates the Markdown report beside it (same name, .md). ~10 minutes;
`--wcxb-only` measures the WCXB section alone (~2 minutes) into a file of its own.
Every row runs the project's own `html_to_text` with the row's configuration; the paragraph rows run the dedup
stage's own steps (`tasks.dedup.steps.dedup_steps`) over the default extraction of every gold page.

Gold data (read in place from the shared data directory, see its PROVENANCE.md 4a/4b and 9):
- trafilatura_eval: 990 real pages; per page `with` snippets (main text) and `without` snippets (boilerplate).
- mozilla_readability: 130 pages with readability.js's expected output; snippets are derived from it
  (dev/readability_pages.py). Half of its sites trained the block selector: the labelled sets score the other half.
- wcxb: 1,497 real pages of seven types (articles, forums, products, collections, listings, documentation,
  service pages; PROVENANCE.md 9) with their whole gold main text, scored by WCXB's word F1 (dev/wcxb.py) for the
  default extraction, resiliparse's main content and trafilatura's defaults, on the held-out sites of dev/wcxb.py's
  fixed split (the training split's figures for information).
- the Article Extraction Benchmark (dev/article_benchmark.py: 181 news and blog articles, their body as gold),
  fetched outside the repository, when a local copy is there.
- The trafilatura_eval and readability pages come from almost one host each (954 URLs on 933 hosts), so little
  repeats across them: what paragraph removal does to real multi-page crawls is measured on those under warc/ (no
  labels), read with the pipeline's own record reader.

Every set side by side (benchmarks/labelled_sets.py: the default, main content, resiliparse and trafilatura; F1,
`with` recall, `without` leak and ms per page; the default's margin over trafilatura on its worst set) is the
result's `labelled_sets`.
"""
from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import NamedTuple
from urllib.parse import urlsplit

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import write_result  # noqa: E402
from benchmarks.labelled_sets import (DEFAULT, EXTRACTORS, MAIN_CONTENT, labelled_sets,  # noqa: E402
                                      labelled_sets_section, timed_texts)
from configs.dedup import DedupConfig  # noqa: E402
from dev.article_benchmark import DEFAULT_FOLDER as ARTICLES, load_article_benchmark  # noqa: E402
from dev.readability_pages import heldout_half, load_readability  # noqa: E402
from dev.gold_pages import Page, found, load_trafilatura_eval, normalise, score  # noqa: E402
from dev.wcxb import HELDOUT, HELDOUT_SHARE, PAGE_TYPES, TRAIN, WcxbPage, has_gold, load_wcxb, word_f1  # noqa: E402
from configs.html import HtmlTextConfig  # noqa: E402
from storage.document_shard import DOCUMENT_SCHEMA, read_documents, write_documents  # noqa: E402
from storage.locations import shared_data_dir  # noqa: E402
from storage.parquet import read_table  # noqa: E402
from tasks.dedup.apply import TOO_SHORT  # noqa: E402
from tasks.dedup.steps import dedup_steps  # noqa: E402
from tasks.extract.documents import NotADocument, document_id, is_candidate, payload_of  # noqa: E402
from tasks.extract.html_text import html_to_text  # noqa: E402
from tasks.extract.records import RawRecord, read_records  # noqa: E402

METRIC = """\
- A snippet is *found* when its whitespace-normalised text (each run of whitespace -> one space, stripped) is a
  substring of the whitespace-normalised extracted text. Figures pool all snippets of a set (micro average);
  a page whose extraction is empty finds none of its `with` snippets.
- **recall** = found `with` snippets / all `with` snippets; **leak** = found `without` snippets / all `without`.
- **readability recall**: the `with` snippets of a readability page are its expected.html's innermost <p>, <li>,
  <pre> and <h1>-<h6> elements without images, rendered to text by resiliparse, of at least 4 words.
- **readability leak (approx.)**: its `without` snippets are the lines of at least 5 words of the whole page's
  text (resiliparse, no main-content heuristics) that occur neither in the expected text nor in the page's
  title/byline/excerpt/site-name metadata, i.e. what readability.js left out. It is readability's judgement,
  not a human's, and it does not sample lines under 5 words (menus), so it understates navigation.
- **odd, held out**: the same figures on the odd-indexed trafilatura_eval pages only. Levers and thresholds were
  chosen looking at the even-indexed pages; the odd ones were only read for this report.
- **Paragraph dedup**: the default extraction of all {pages} gold pages (both sets) written as one document shard,
  one document per page with a non-empty text, then the dedup stage's steps in one process
  (`tasks.dedup.steps.dedup_steps`). "paragraphs only" rows turn exact, URL and MinHash dedup off, so no
  gold page is removed as a copy: a line (lowercased, whitespace collapsed, digits -> 0) in at least
  `min_documents` distinct documents (identical texts count once) is removed from every document. A document
  left empty is dropped and scores as an empty extraction.
- **ms/page**: CPU time of html_to_text per page over all {pages} pages, one process, the fastest of {repeats}
  passes after a warm-up call (CPU time because the benchmark machine is shared).
"""
TARGET_RECALL, TARGET_LEAK = 0.95, 0.08
PARAGRAPH_MIN_DOCUMENTS = (2, 3, 5)
FULL_RESULT = ROOT / "benchmarks" / "results" / "extraction_quality.json"
WCXB_RESULT = ROOT / "benchmarks" / "results" / "extraction_wcxb.json"
GOLD_DATE = "2024-01-01T00:00:00Z"  # the gold pages have no capture date; dedup only reads it to rank copies
SAME_HOST_CRAWLS = ("warc/webarchive/archivesunleashed-aut/example.warc.gz",
                    "warc/webarchive/allenai-dolma/sample-0000.warc.gz",
                    "warc/webarchive/allenai-dolma/sample-0001.warc.gz",
                    "warc/commoncrawl/chatnoir-resiliparse/warcfile.warc.gz")


@dataclass
class Row:
    name: str
    html: HtmlTextConfig
    default: bool = False


def _resiliparse_only(**changes) -> HtmlTextConfig:
    """resiliparse's own defaults (no post-filters, no skip selectors, no fallback), with `changes` applied."""
    plain = dict(comments=True, alt_texts=True, skip_elements=[], max_link_density=None,
                 drop_orphan_headings=False, tail_max_words=0, fallback_min_chars=0, block_selector=False)
    return HtmlTextConfig(**(plain | changes))


DEFAULT_SKIP = DEFAULT.skip_elements
SIDEBAR_SELECTORS = ['[class~="sidebar"]', '[class~="widget"]', '[id~="sidebar"]']
SHARE_RELATED_SELECTORS = ['[class~="share"]', '[class~="social"]', '[class~="related"]',
                           '[class~="newsletter"]', '[class~="breadcrumb"]', '[class~="tags"]']

# Cumulative: each "+" row adds one lever to the row above it; then levers on main content (the default without the
# block selector) and one-lever variations of the default.
FALLBACK_PEER = HtmlTextConfig(engine="trafilatura")      # the extractor a fallback would switch to
ROWS = [
    Row("resiliparse whole page", _resiliparse_only(main_content=False)),
    Row("resiliparse main_content (peer)", _resiliparse_only()),
    Row("+ comments=False", _resiliparse_only(comments=False)),
    Row("+ alt_texts=False", _resiliparse_only(comments=False, alt_texts=False)),
    Row("+ skip nav/footer/aside/figcaption/ARIA roles",
        _resiliparse_only(comments=False, alt_texts=False, skip_elements=DEFAULT_SKIP)),
    Row("+ drop orphan headings", HtmlTextConfig(tail_max_words=0, fallback_min_chars=0, block_selector=False)),
    Row(f"+ drop short (< {DEFAULT.tail_max_words} words) lines after the article",
        HtmlTextConfig(fallback_min_chars=0, block_selector=False)),
    Row(f"+ whole-page fallback when main content < {DEFAULT.fallback_min_chars} chars (main content)", MAIN_CONTENT),
    Row("+ block selector (trained on WCXB and the even pages)", DEFAULT, default=True),
    Row("main content + drop blocks with link density > 0.5",
        HtmlTextConfig(max_link_density=0.5, block_selector=False)),
    Row("main content + drop blocks with link density > 0.8",
        HtmlTextConfig(max_link_density=0.8, block_selector=False)),
    Row("main content + drop blocks the boilerplate classifier gives p > 0.9",
        HtmlTextConfig(max_boilerplate_probability=0.9, block_selector=False)),
    Row("main content + drop blocks the boilerplate classifier gives p > 0.95",
        HtmlTextConfig(max_boilerplate_probability=0.95, block_selector=False)),
    Row("default, but tail lines < 5 words dropped", HtmlTextConfig(tail_max_words=5)),
    Row("default, but tail lines < 20 words dropped", HtmlTextConfig(tail_max_words=20)),
    Row("default, but fallback < 300 chars", HtmlTextConfig(fallback_min_chars=300)),
    Row("default, but fallback < 1000 chars", HtmlTextConfig(fallback_min_chars=1000)),
    Row("default, but post_meta=False", HtmlTextConfig(post_meta=False)),
    Row("default, but comments=True", HtmlTextConfig(comments=True)),
    Row("default, but alt_texts=True", HtmlTextConfig(alt_texts=True)),
    Row("default, but no skip_elements", HtmlTextConfig(skip_elements=[])),
    Row("default, but orphan headings kept", HtmlTextConfig(drop_orphan_headings=False)),
    Row("default + sidebar/widget selectors", HtmlTextConfig(skip_elements=DEFAULT_SKIP + SIDEBAR_SELECTORS)),
    Row("default + share/social/related/newsletter/breadcrumb/tags selectors",
        HtmlTextConfig(skip_elements=DEFAULT_SKIP + SHARE_RELATED_SELECTORS)),
    Row("trafilatura (include_comments=False)", FALLBACK_PEER),
    Row("trafilatura favor_precision", HtmlTextConfig(engine="trafilatura", favor_precision=True)),
]
# The post-filter thresholds searched on the even pages only; the default is the grid point with the least
# leak among those with recall >= TARGET_RECALL there.
GRID = {"max_link_density": (0.5, 0.8, None), "tail_max_words": (0, 5, 10, 15, 20),
        "fallback_min_chars": (300, 600, 1000)}


def grid_search(gold: list[Page]) -> list[dict]:
    """Recall and leak on the even-indexed gold pages for every combination of GRID's thresholds."""
    even = gold[::2]
    points = []
    for values in itertools.product(*GRID.values()):
        settings = dict(zip(GRID, values))
        config = HtmlTextConfig(**settings, block_selector=False)   # the filters of main content, the selector's input
        figures = score(even, [html_to_text(page.html, config) for page in even])
        points.append(settings | {"recall": figures["recall"], "leak": figures["leak"]})
    return points


def chosen_point(points: list[dict]) -> dict | None:
    eligible = [point for point in points if point["recall"] >= TARGET_RECALL]
    return min(eligible, key=lambda point: (point["leak"], -point["recall"])) if eligible else None


def pareto_front(points: list[dict]) -> list[dict]:
    """Points that no other point beats on both recall (higher) and leak (lower)."""
    front = [point for point in points if not any(
        other["recall"] >= point["recall"] and other["leak"] <= point["leak"]
        and (other["recall"], other["leak"]) != (point["recall"], point["leak"]) for other in points)]
    return sorted(front, key=lambda point: point["recall"])


def extract_all(pages: list[Page], config: HtmlTextConfig) -> tuple[list[str], float]:
    """Texts of `pages` under `config`, and the CPU seconds it took."""
    started = time.process_time()
    texts = [html_to_text(page.html, config) for page in pages]
    return texts, time.process_time() - started


FALLBACK_SHARES = (0.1, 0.2)


def fallback_bound(gold: list[Page], default: dict, default_texts: list[str], peer: dict,
                   peer_texts: list[str]) -> dict:
    """How far the lever "trafilatura on the pages where our text looks like navigation" can go: the `default`
    row's extraction with the trafilatura row's (`peer`) text on the share of pages where switching lowers the leak
    most (an oracle picks them, so no real detector does better), and the cost per page if trafilatura ran on those
    pages only and picking them were free. The share the issue's cost bound (1.5x the default's ms/page) allows is
    listed first; the last share switches every page where trafilatura's text is better: the per-page best of both.
    `*_texts`: the rows' texts of the `gold` pages."""
    counts = [(found(page, own), found(page, other)) for page, own, other in zip(gold, default_texts, peer_texts)]

    def loss(index: int) -> float:     # of switching the page: leak added first, then recall lost
        (own_with, own_without), (peer_with, peer_without) = counts[index]
        return peer_without - own_without - 0.001 * (peer_with - own_with)

    ranked = sorted(range(len(gold)), key=loss)
    better = sum(loss(index) < 0 for index in ranked) / len(gold)
    within_bound = 0.5 * default["ms_per_page"] / peer["ms_per_page"]
    total_with, total_without = (sum(len(getattr(page, name)) for page in gold)
                                 for name in ("with_snippets", "without_snippets"))
    switched_rows = []
    for share in (round(within_bound, 3), *FALLBACK_SHARES, round(better, 3)):
        switched = set(ranked[:round(share * len(gold))])
        chosen = [counts[index][index in switched] for index in range(len(gold))]
        switched_rows.append({
            "pages_switched_share": share, "recall": sum(with_ for with_, _ in chosen) / total_with,
            "leak": sum(without for _, without in chosen) / total_without,
            "ms_per_page": default["ms_per_page"] + share * peer["ms_per_page"]})
    return {"default_ms_per_page": default["ms_per_page"], "trafilatura_ms_per_page": peer["ms_per_page"],
            "share_within_cost_bound": round(within_bound, 3), "switched": switched_rows}


BOUND_RECALLS = (0.0, TARGET_RECALL)     # 0: the least leak at any recall


class SweepPoint(NamedTuple):
    weight: float
    objective: float          # summed over pages: min over rows of `without` found - weight x `with` found
    found_with: int
    found_without: int
    chosen: np.ndarray        # the row picked for each page


def is_option_row(row: Row) -> bool:
    """A row the options bound may pick: resiliparse without the boilerplate classifier or the block selector
    (levers of their own)."""
    return (row.html.engine == "resiliparse" and row.html.max_boilerplate_probability is None
            and not row.html.block_selector)


def options_bound(gold: list[Page], rows: list[tuple[dict, list[str]]]) -> dict:
    """How far the lever "resiliparse's main-content options per page type" can go: every trafilatura_eval page
    extracted with whichever option row an oracle picks for it (a page-type rule gives a whole class of pages one
    row, so it can do no better). `rows`: the option rows as (figures, gold-page texts), the default first. The
    cost reported is the chosen rows' mean ms/page: the issue's bound is 1.5x the default's.

    The oracle picks per page the row with the least `without` found minus `weight` x `with` found (ties go to the
    earlier row), for weights from 0 up; for each recall floor the least leak of any weight that reaches it is
    reported (floors no weight reaches are left out), and the Lagrangian dual bound: no per-page choice among these
    rows leaks less at that recall."""
    counts = np.array([[found(page, text) for page, text in zip(gold, texts)] for _, texts in rows])
    found_with, found_without = counts[..., 0], counts[..., 1]      # rows x pages
    total_with = sum(len(page.with_snippets) for page in gold)
    total_without = sum(len(page.without_snippets) for page in gold)
    pages, row_ms = np.arange(len(gold)), np.array([figures["ms_per_page"] for figures, _ in rows])
    sweep = []
    for weight in np.linspace(0.0, 20.0, 2001):     # past 20 every page takes its highest-recall row
        cost = found_without - weight * found_with
        chosen = cost.argmin(axis=0)
        sweep.append(SweepPoint(weight, cost.min(axis=0).sum(), found_with[chosen, pages].sum(),
                                found_without[chosen, pages].sum(), chosen))
    floors = []
    for floor in BOUND_RECALLS:
        needed = floor * total_with
        reaching = [point for point in sweep if point.found_with >= needed]
        if not reaching:
            continue
        best = min(reaching, key=lambda point: point.found_without)
        dual = max(0.0, max(point.objective + point.weight * needed for point in sweep))
        used = Counter(rows[index][0]["name"] for index in best.chosen)
        floors.append({"recall_floor": floor, "recall": best.found_with / total_with,
                       "leak": best.found_without / total_without, "leak_lower_bound": dual / total_without,
                       "ms_per_page": float(row_ms[best.chosen].mean()), "pages_per_row": dict(used.most_common())})
    return {"rows": [figures["name"] for figures, _ in rows], "at_recall": floors}


def gold_scores(gold: list[Page], gold_texts: list[str], readability: list[Page],
                readability_texts: list[str]) -> dict:
    return {"trafilatura_eval": score(gold, gold_texts), "trafilatura_eval_even": score(gold, gold_texts, 0),
            "trafilatura_eval_odd": score(gold, gold_texts, 1), "readability": score(readability, readability_texts)}


def measure(row: Row, gold: list[Page], readability: list[Page], repeats: int) -> tuple[dict, list[str]]:
    """The row's figures, and its texts of the `gold` pages."""
    html_to_text(gold[0].html, row.html)  # warm-up: lazy imports
    cpu_seconds = []
    for _ in range(repeats):
        gold_texts, gold_seconds = extract_all(gold, row.html)
        readability_texts, readability_seconds = extract_all(readability, row.html)
        cpu_seconds.append(gold_seconds + readability_seconds)
    return ({"name": row.name, "default": row.default, "html": row.html.model_dump()}
            | gold_scores(gold, gold_texts, readability, readability_texts)
            | {"empty_texts": sum(not text.strip() for text in gold_texts + readability_texts),
               "ms_per_page": 1000 * min(cpu_seconds) / (len(gold) + len(readability))}), gold_texts


def as_document(doc_id: str, url: str, text: str, date: str) -> dict:
    """A document-shard row for a gold page. Gold pages are HTML files, not WARC records, so there is no WARC
    path, offset or language to record: those columns are empty (with no `lang`, dedup shingles by words)."""
    return {"id": doc_id, "url": url, "text": text, "lang": "", "lang_score": 0.0, "source": "benchmark",
            "warc_path": "", "warc_record_id": doc_id, "warc_offset": 0, "warc_date": date, "charset": "utf-8"}


@dataclass
class Deduplicated:
    kept: dict[str, str]                        # id -> text after dedup
    removed: dict[str, tuple[str, str | None]]  # id -> (reason, duplicate cluster = id of the kept copy)

    def text_of(self, doc_id: str) -> str:
        """A document's text in the deduplicated corpus: its own, its kept copy's if it was removed as a copy,
        "" if it was dropped."""
        if doc_id in self.kept:
            return self.kept[doc_id]
        return self.kept.get(self.removed.get(doc_id, ("", None))[1], "")


def deduplicate(documents: list[dict], config: DedupConfig) -> Deduplicated:
    """The dedup stage's steps in one process over `documents`, written as one document shard."""
    with tempfile.TemporaryDirectory(prefix="sluice-extraction-quality-") as tmp:
        shard = f"{tmp}/input/documents.parquet"
        write_documents({name: [doc[name] for doc in documents] for name in DOCUMENT_SCHEMA.names}, shard)
        dedup_steps([shard], f"{tmp}/dedup", config)
        kept = read_documents(f"{tmp}/dedup/shards/documents.parquet", ["id", "text"]).to_pylist()
        removed = read_table(f"{tmp}/dedup/removed/documents.parquet").to_pylist()
    return Deduplicated({row["id"]: row["text"] for row in kept},
                        {row["id"]: (row["reason"], row["dup_cluster"]) for row in removed})


def removal_figures(before: list[str], after: list[str]) -> dict:
    """Lines and characters that dedup took out of texts (`after` is "" for a document it dropped)."""
    removed_lines: Counter[str] = Counter()
    for old, new in zip(before, after):
        kept = Counter(new.split("\n"))
        for line in old.split("\n"):
            if kept[line]:
                kept[line] -= 1
            elif line.strip():
                removed_lines[line[:80]] += 1
    chars = sum(len(text) for text in before)
    return {"lines": sum(text.count("\n") + 1 for text in before), "lines_removed": sum(removed_lines.values()),
            "chars_removed_share": 1 - sum(len(text) for text in after) / max(1, chars),
            "most_removed_lines": removed_lines.most_common(12)}


def lost_with_snippets(pages: list[tuple[str, Page]], before: list[str], after: list[str]) -> list[str]:
    """`with` snippets found in a page's plain extraction but not after dedup, as "page: snippet"."""
    lost = []
    for (doc_id, page), old, new in zip(pages, before, after):
        old, new = normalise(old), normalise(new)
        lost += [f"{doc_id}: {snippet[:80]}" for snippet in page.with_snippets if snippet in old and snippet not in new]
    return lost


def gold_dedup_runs() -> list[tuple[str, DedupConfig]]:
    """Repeated-paragraph removal alone (no gold page is removed as a copy) at each threshold, then the whole
    stage as the pipeline runs it by default."""
    runs = [(f"paragraphs only, min_documents={count}",
             DedupConfig(exact={"enabled": False}, url={"enabled": False}, minhash={"enabled": False},
                         paragraphs={"min_documents": count})) for count in PARAGRAPH_MIN_DOCUMENTS]
    return runs + [("whole dedup stage, default config (min_documents=3)", DedupConfig())]


def paragraph_dedup(gold: list[Page], readability: list[Page]) -> dict:
    """Scores of the default extraction before and after the dedup stage's corpus-level repeated-paragraph
    removal, with every gold page of both sets as one document of one corpus."""
    pages = [(f"trafilatura_eval/{page.name}", page) for page in gold] \
        + [(f"mozilla_readability/{page.name}", page) for page in readability]
    texts = [html_to_text(page.html, DEFAULT) for _, page in pages]
    documents = [as_document(doc_id, page.url or doc_id, text, GOLD_DATE)
                 for (doc_id, page), text in zip(pages, texts) if text.strip()]
    runs = []
    for name, config in gold_dedup_runs():
        result = deduplicate(documents, config)
        after = [result.text_of(doc_id) for doc_id, _ in pages]
        lost = lost_with_snippets(pages, texts, after)
        runs.append({"name": name, "config": config.model_dump()}
                    | gold_scores(gold, after[:len(gold)], readability, after[len(gold):])
                    | removal_figures(texts, after)
                    | {"documents_removed": dict(Counter(reason for reason, _ in result.removed.values())),
                       "with_snippets_lost": len(lost), "with_snippets_lost_samples": lost[:12]})
    return {"documents": len(documents), "before": gold_scores(gold, texts[:len(gold)], readability, texts[len(gold):]),
            "after": runs}


def crawl_documents(path: Path, config: HtmlTextConfig) -> list[dict]:
    """The non-empty HTML documents of a WARC, read and extracted as the pipeline does (no language ID)."""
    documents = []
    for record in read_records(str(path), 8 << 20):
        if not isinstance(record, RawRecord) or not is_candidate(record):
            continue
        try:
            payload = payload_of(record)
        except NotADocument:
            continue
        text = payload.markup if payload.is_plain_text else html_to_text(payload.markup, config)
        if text.strip():
            documents.append(as_document(document_id(record, path.name), record.target_uri, text, record.date))
    return documents


def measure_crawl(path: Path, name: str) -> dict:
    """What the dedup stage (default config) removes from a whole real crawl taken as the corpus (no gold):
    duplicate documents, then repeated lines of the documents that stay."""
    documents = crawl_documents(path, DEFAULT)
    result = deduplicate(documents, DedupConfig())
    copies = {doc_id for doc_id, (reason, _) in result.removed.items() if reason != TOO_SHORT}
    survivors = [doc for doc in documents if doc["id"] not in copies]
    after = [result.kept.get(doc["id"], "") for doc in survivors]
    return ({"file": name, "documents": len(documents),
             "hosts": len({(urlsplit(doc["url"]).hostname or "").lower() for doc in documents}),
             "duplicates_removed": len(copies), "documents_emptied": len(result.removed) - len(copies)}
            | removal_figures([doc["text"] for doc in survivors], after))


WCXB_SIDES = {"heldout": (HELDOUT,), "train": (TRAIN,), "all": (HELDOUT, TRAIN)}


def wcxb_scores(pages: list[WcxbPage], texts: list[str], seconds: list[float]) -> dict:
    snippets = score(pages, texts)
    return {"pages": len(pages), "f1": fmean(word_f1(text, page.main_content) for page, text in zip(pages, texts)),
            "with_recall": snippets["recall"], "without_leak": snippets["leak"],
            "ms_per_page": 1000 * sum(seconds) / len(pages)}


def wcxb_side(pages: list[WcxbPage], texts: list[str], seconds: list[float], splits: tuple[str, ...]) -> dict:
    """The scores of the pages on the given sides of the split, overall and per page type."""
    def of(page_types: tuple[str, ...]) -> dict:
        chosen = [index for index, page in enumerate(pages) if page.split in splits and page.page_type in page_types]
        return wcxb_scores([pages[i] for i in chosen], [texts[i] for i in chosen], [seconds[i] for i in chosen])

    return of(PAGE_TYPES) | {"by_type": {page_type: of((page_type,)) for page_type in PAGE_TYPES}}


def _pages_per_type(pages: list[WcxbPage]) -> dict[str, int]:
    counts = Counter(page.page_type for page in pages)
    return {page_type: counts[page_type] for page_type in PAGE_TYPES}


def split_counts(pages: list[WcxbPage]) -> dict:
    """Per side of the split: its domains, and its pages per type, all and scored (with a gold main text)."""
    counts = {}
    for split in (HELDOUT, TRAIN):
        side = [page for page in pages if page.split == split]
        counts[split] = {"domains": len({page.domain for page in side}), "pages": _pages_per_type(side),
                         "scored": _pages_per_type([page for page in side if has_gold(page)])}
    return counts


def measure_wcxb(folder: Path) -> dict:
    """WCXB's figures for each extractor: held out, training split, and all pages with a gold main text."""
    pages = load_wcxb(folder)
    scored = [page for page in pages if has_gold(page)]
    sides: dict[str, dict] = {side: {} for side in WCXB_SIDES}
    for name, (_, extractor) in EXTRACTORS.items():
        texts, seconds = timed_texts(scored, extractor)
        for side, splits in WCXB_SIDES.items():
            sides[side][name] = wcxb_side(scored, texts, seconds, splits)
        held = sides["heldout"][name]
        print(f"wcxb {name:12s} held-out F1 {held['f1']:.3f} with {held['with_recall']:.3f} "
              f"without {held['without_leak']:.3f} {held['ms_per_page']:.1f} ms/page", flush=True)
    return {"pages": len(pages), "without_gold": len(pages) - len(scored), "split": split_counts(pages),
            "extractors": {name: description for name, (description, _) in EXTRACTORS.items()}} | sides


def machine(info: dict) -> str:
    return f"{info['cores']} cores ({info['cpu']}), Python {info['python']}"


def _score_cells(figures: dict) -> str:
    gold, odd, readability = figures["trafilatura_eval"], figures["trafilatura_eval_odd"], figures["readability"]
    return (f"{gold['recall']:.3f} | {gold['leak']:.3f} | {odd['recall']:.3f} | {odd['leak']:.3f} | "
            f"{readability['recall']:.3f} | {readability['leak']:.3f}")


SCORE_HEADER = ("recall | leak | recall (odd, held out) | leak (odd, held out) | readability recall "
                "| readability leak (approx.)")


def _quality_table(rows: list[dict]) -> str:
    lines = [f"| configuration | {SCORE_HEADER} | ms/page |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        name = f"**{row['name']} = default**" if row["default"] else row["name"]
        lines.append(f"| {name} | {_score_cells(row)} | {row['ms_per_page']:.1f} |")
    return "\n".join(lines)


def _fallback_table(bound: dict) -> str:
    lines = ["| pages switched to trafilatura | recall | leak | ms/page |", "|---|---|---|---|"]
    for row in bound["switched"]:
        mark = " (within 1.5x the cost)" if row["pages_switched_share"] == bound["share_within_cost_bound"] else ""
        lines.append(f"| {row['pages_switched_share']:.1%}{mark} | {row['recall']:.3f} | {row['leak']:.3f} | "
                     f"{row['ms_per_page']:.1f} |")
    return "\n".join(lines)


def _options_table(bound: dict) -> str:
    lines = ["| recall at least | recall | leak | no choice leaks less than | ms/page | pages per row (most used) |",
             "|---|---|---|---|---|---|"]
    for point in bound["at_recall"]:
        used = "; ".join(f"{name} {count}" for name, count in list(point["pages_per_row"].items())[:4])
        floor = f"{point['recall_floor']:.2f}" if point["recall_floor"] else "any"
        lines.append(f"| {floor} | {point['recall']:.3f} | {point['leak']:.3f} | "
                     f"{point['leak_lower_bound']:.3f} | {point['ms_per_page']:.1f} | {used} |")
    return "\n".join(lines)


def _line_samples(counts: list, limit: int) -> str:
    return "; ".join(f"`{line.replace('|', '/').replace(chr(9), ' ')}` x{count}"
                     for line, count in counts[:limit]) or "-"


def _paragraph_table(paragraphs: dict) -> str:
    lines = [f"| gold pages | {SCORE_HEADER} | lines removed | share of characters removed | documents removed "
             "| `with` snippets lost |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines.append(f"| before: default extraction | {_score_cells(paragraphs['before'])} | - | - | - | - |")
    for run in paragraphs["after"]:
        removed = ", ".join(f"{reason} {count}" for reason, count in run["documents_removed"].items()) or "0"
        lines.append(f"| after: {run['name']} | {_score_cells(run)} | {run['lines_removed']} | "
                     f"{run['chars_removed_share']:.3f} | {removed} | {run['with_snippets_lost']} |")
    return "\n".join(lines)


def _paragraph_examples(paragraphs: dict) -> str:
    text = []
    for run in paragraphs["after"]:
        lost = "; ".join(f"`{sample.replace('|', '/')}`" for sample in run["with_snippets_lost_samples"][:6])
        text.append(f"- {run['name']}: most removed lines {_line_samples(run['most_removed_lines'], 8)}. "
                    f"`with` snippets lost: {lost or 'none'}.")
    return "\n".join(text)


def _crawl_table(crawls: list[dict]) -> str:
    lines = ["| crawl | documents | hosts | removed as copies | lines (other documents) | lines removed "
             "| share of characters removed | documents emptied (dropped) | most removed lines |",
             "|---|---|---|---|---|---|---|---|---|"]
    for crawl in crawls:
        lines.append(f"| {crawl['file']} | {crawl['documents']} | {crawl['hosts']} | {crawl['duplicates_removed']} | "
                     f"{crawl['lines']} | {crawl['lines_removed']} | {crawl['chars_removed_share']:.3f} | "
                     f"{crawl['documents_emptied']} | {_line_samples(crawl['most_removed_lines'], 6)} |")
    return "\n".join(lines)


def _grid_table(points: list[dict]) -> str:
    chosen = chosen_point(points)
    lines = ["| max_link_density | tail_max_words | fallback_min_chars | recall (even) | leak (even) |",
             "|---|---|---|---|---|"]
    for point in pareto_front(points):
        mark = " **chosen**" if point is chosen else ""
        lines.append(f"| {point['max_link_density']} | {point['tail_max_words']} | {point['fallback_min_chars']} | "
                     f"{point['recall']:.4f} | {point['leak']:.4f}{mark} |")
    return "\n".join(lines)


def _fitted_on_even_pages(row: dict) -> bool:
    """The boilerplate classifier's and the block selector's rows: their even-page figures are in-sample."""
    return row["html"]["max_boilerplate_probability"] is not None or row["html"].get("block_selector", False)


def _summary(rows: list[dict], points: list[dict]) -> str:
    default = next(row for row in rows if row["default"])
    gold, odd = default["trafilatura_eval"], default["trafilatura_eval_odd"]
    reached = gold["recall"] >= TARGET_RECALL and gold["leak"] <= TARGET_LEAK
    least_leak = min(rows, key=lambda row: row["trafilatura_eval"]["leak"])
    peer = next(row for row in rows if row["name"].startswith("resiliparse main_content"))
    text = [f"Target for the default: recall >= {TARGET_RECALL} and leak <= {TARGET_LEAK} on trafilatura_eval. "
            f"The default reaches recall {gold['recall']:.3f} and leak {gold['leak']:.3f} (held-out odd pages: "
            f"{odd['recall']:.3f} / {odd['leak']:.3f}) at {default['ms_per_page']:.1f} ms/page: the target is "
            f"**{'reached' if reached else 'not reached'}**.",
            f"The lowest leak of any configuration measured is {least_leak['trafilatura_eval']['leak']:.3f} "
            f"({least_leak['name']}, recall {least_leak['trafilatura_eval']['recall']:.3f}).",
            f"Against resiliparse's own main-content extraction ({peer['trafilatura_eval']['recall']:.3f} / "
            f"{peer['trafilatura_eval']['leak']:.3f}, {peer['ms_per_page']:.1f} ms/page), the default changes recall "
            f"by "
            f"{gold['recall'] - peer['trafilatura_eval']['recall']:+.3f} and leak by "
            f"{gold['leak'] - peer['trafilatura_eval']['leak']:+.3f}."]
    eligible = [row for row in rows if row["html"]["engine"] == "resiliparse" and not _fitted_on_even_pages(row)
                and row["trafilatura_eval_even"]["recall"] >= TARGET_RECALL]
    if eligible:
        least = min(row["trafilatura_eval_even"]["leak"] for row in eligible)
        best = [row["name"] for row in eligible if row["trafilatura_eval_even"]["leak"] == least]
        verdict = "is the default" if default in eligible and default["trafilatura_eval_even"]["leak"] == least \
            else f"is not the default but {'; '.join(best)}"
        text.append(f"Among the resiliparse rows with recall >= {TARGET_RECALL} on the even pages (but those of a "
                    f"model fitted on them), the one with the least leak there {verdict}.")
    chosen = chosen_point(points) if points else None
    if chosen is not None:
        matches = all(default["html"][key] == chosen[key] for key in GRID)
        text.append(f"The post-filter thresholds are the grid point with the least leak among those with recall >= "
                    f"{TARGET_RECALL} on the even pages ({', '.join(f'{key}={chosen[key]}' for key in GRID)}); "
                    f"the default {'uses' if matches else 'does NOT use'} them.")
    return " ".join(text)


PARAGRAPH_SETS = {"trafilatura_eval": "trafilatura_eval", "trafilatura_eval_odd": "its odd pages",
                  "readability": "readability"}


def _paragraph_summary(paragraphs: dict) -> str:
    before, runs = paragraphs["before"], paragraphs["after"]
    parts, any_drop = [], False
    for run in runs:
        drops = [f"{label} {before[key]['recall']:.4f} -> {run[key]['recall']:.4f}"
                 for key, label in PARAGRAPH_SETS.items() if run[key]["recall"] < before[key]["recall"]]
        any_drop = any_drop or bool(drops)
        parts.append(f"{run['name']}: leak {before['trafilatura_eval']['leak']:.3f} -> "
                     f"{run['trafilatura_eval']['leak']:.3f} (odd pages {before['trafilatura_eval_odd']['leak']:.3f} "
                     f"-> {run['trafilatura_eval_odd']['leak']:.3f}), recall "
                     + (f"drops ({', '.join(drops)})" if drops else "does not drop"))
    reached = any(run["trafilatura_eval"]["leak"] <= TARGET_LEAK for run in runs)
    return (f"Corpus-level repeated-paragraph removal (the dedup stage) on the default extraction of the gold pages: "
            f"{'; '.join(parts)}. Leak <= {TARGET_LEAK} is **{'reached' if reached else 'not reached'}** with it, "
            f"and recall **{'drops' if any_drop else 'does not drop'}**.")


WCXB_SIDE_TITLES = {"heldout": "Held-out sites", "train": "Training split (for information only)",
                    "all": "All pages with a gold main text"}
WCXB_METRIC = """\
- **F1**: WCXB's word F1 (dev/wcxb.py `word_f1`, as the benchmark's evaluate.py): the multisets of `\\w+` tokens of
  the lower-cased extraction and of `ground_truth.main_content`; averaged over pages. The {without_gold} pages
  whose gold has no word are left out.
- **`with` recall / `without` leak**: found `with` / `without` snippets over all of them, pooled over the pages
  (whitespace-normalised substring, case-sensitive, as for the other gold sets above; WCXB's script averages
  per-page shares, case-insensitively).
- **ms/page**: CPU time of one pass per page (after a warm-up call), one process; noisy on a shared machine.
- **Split**: whole sites (domain without subdomains) held out, stratified by the site's page type and ordered by
  the SHA-256 of its name, {heldout_share:.0%} of each type's pages (dev/wcxb.py). Chosen before any tuning;
  study and tune on the training split only.
"""


def _wcxb_split_table(split: dict) -> str:
    lines = ["| page type | training pages (scored) | held-out pages (scored) |", "|---|---:|---:|"]
    for page_type in PAGE_TYPES:
        cells = [f"{split[side]['pages'][page_type]} ({split[side]['scored'][page_type]})" for side in (TRAIN, HELDOUT)]
        lines.append(f"| {page_type} | {' | '.join(cells)} |")
    totals = [f"{sum(split[side]['pages'].values())} ({sum(split[side]['scored'].values())}), "
              f"{split[side]['domains']} domains" for side in (TRAIN, HELDOUT)]
    return "\n".join(lines + [f"| all | {' | '.join(totals)} |"])


def _wcxb_table(figures: dict) -> str:
    """One row per page type; each cell lists the extractors' figures in EXTRACTORS's order."""
    lines = ["| page type | pages | F1 | `with` recall | `without` leak | ms/page |", "|---|---:|---|---|---|---|"]
    for page_type in ("all", *PAGE_TYPES):
        rows = [side if page_type == "all" else side["by_type"][page_type] for side in figures.values()]
        cells = [" / ".join(f"{row[key]:.3f}" for row in rows) for key in ("f1", "with_recall", "without_leak")]
        times = " / ".join(f"{row['ms_per_page']:.1f}" for row in rows)
        lines.append(f"| {page_type} | {rows[0]['pages']} | {' | '.join(cells)} | {times} |")
    return "\n".join(lines)


def wcxb_section(wcxb: dict) -> str:
    """The WCXB figures as Markdown: the split, then a table per side."""
    order = " / ".join(wcxb["extractors"])
    text = ["Each cell: " + "; ".join(f"**{name}** = {description}" for name, description in
                                       wcxb["extractors"].items()) + f" (in this order: {order}).",
            "", _wcxb_split_table(wcxb["split"])]
    for side, title in WCXB_SIDE_TITLES.items():
        text += ["", f"### {title}", "", _wcxb_table(wcxb[side])]
    text += ["", "### How the WCXB figures are computed", "",
             WCXB_METRIC.format(without_gold=wcxb["without_gold"], heldout_share=HELDOUT_SHARE)]
    return "\n".join(text)


def render_wcxb_markdown(result: dict) -> str:
    return (f"# Extraction quality on WCXB (seven page types, whole main text)\n\n"
            f"Generated by `{result['command']}` on {result['date']}, {machine(result['machine'])}.\n"
            f"Regenerate with the same command (from the repository root); do not edit by hand.\n\n"
            f"{result['wcxb']['pages']} pages (WCXB v1.0 dev split, shared data html/wcxb).\n\n"
            f"{wcxb_section(result['wcxb'])}")


def render_markdown(result: dict) -> str:
    points = result["grid_even_pages"]
    return REPORT.format(
        command=result["command"], date=result["date"], machine=machine(result["machine"]), counts=result["counts"],
        summary=_summary(result["rows"], points), paragraph_summary=_paragraph_summary(result["paragraph_dedup"]),
        quality_table=_quality_table(result["rows"]),
        fallback_table=_fallback_table(result["trafilatura_fallback_bound"]) if result["trafilatura_fallback_bound"]
        else "(not run: the default or the trafilatura row was left out by --rows)",
        options_rows=len(result["resiliparse_options_bound"]["rows"]),
        options_table=_options_table(result["resiliparse_options_bound"]),
        paragraph_documents=result["paragraph_dedup"]["documents"],
        paragraph_table=_paragraph_table(result["paragraph_dedup"]),
        paragraph_examples=_paragraph_examples(result["paragraph_dedup"]),
        grid_table=_grid_table(points) if points else "(not run: --skip-grid)",
        crawl_table=_crawl_table(result["same_host_crawls"]), wcxb=wcxb_section(result["wcxb"]),
        labelled_sets="\n".join(labelled_sets_section(result["labelled_sets"])),
        metric=METRIC.format(pages=result["pages"], repeats=result["repeats"]))


REPORT = """# Extraction quality: HTML-to-text, and corpus-level paragraph dedup after it

Generated by `{command}` on {date}, {machine}.
Regenerate with the same command (from the repository root); do not edit by hand.

Gold: {counts}.

## Result

{summary}

{paragraph_summary}

## Levers

Each "+" row adds one lever to the row above it; the rows after the default change one lever of the default.

{quality_table}

## WCXB: seven page types, whole main text

{wcxb}

## Every labelled set: the default against Trafilatura

{labelled_sets}

## How far a trafilatura fallback can go

The default extraction with trafilatura's text on a share of the trafilatura_eval pages: the pages where switching
lowers the leak most, picked by an oracle that reads the gold labels, so no real detector of "navigation-like"
output does better at that share. ms/page counts trafilatura on the switched pages only and the picking as free.
The first row is the share that stays within 1.5x the default's cost; the last switches every page where
trafilatura's text is better (the per-page best of both).

{fallback_table}

## How far resiliparse's options per page type can go

Each trafilatura_eval page extracted with whichever of the {options_rows} resiliparse rows above without the
boilerplate classifier an oracle picks for it from the gold labels. A rule that picks options by page type gives
a whole class of pages the same row, so it can do no better. The oracle minimises leak for a recall floor by a
sweep of per-page trade-offs (`without` found minus a weight times `with` found); "no choice leaks less than" is
that sweep's Lagrangian bound, which holds for every per-page choice among these rows. ms/page is the chosen
rows' mean cost, the picking counted as free (the issue allows 1.5x the default's).

{options_table}

## Threshold search (even pages only)

The grid over the three post-filter thresholds (other settings at their defaults), shown as its recall/leak
Pareto front; every point is in the JSON.

{grid_table}

## Corpus-level paragraph dedup on the gold pages

Extraction gives each page a text of its own (identical payloads, identical texts); lines repeated across
pages are removed afterwards by the dedup stage (`tasks/dedup/`), which counts each line once per distinct
surviving document over the whole corpus. Here the corpus is the {paragraph_documents} non-empty default
extractions of the gold pages. They come from almost one host each (954 URLs on 933 hosts), so little site
chrome repeats across them: the rows show what the step costs there more than what it removes from one site's
pages (the crawl table below shows that). The last row runs the whole stage as the pipeline does: exact, URL
and MinHash dedup first, and a page removed as a copy is scored with the text of the copy that was kept.

{paragraph_table}

{paragraph_examples}

## Dedup stage on real multi-page crawls (no gold)

Each crawl taken as the whole corpus: the default extraction, then the dedup stage with its default config
(as configs/demo.yaml: exact, URL and MinHash dedup, then lines in >= 3 distinct documents removed). Documents
removed as copies are not counted in the line figures; documents left empty are dropped.

{crawl_table}

## How the figures are computed

{metric}
## Notes

- How the default was chosen: on the even pages only, the configuration with the least leak among those keeping
  recall >= the target (the checks above say whether that still holds for this run). Every lever has a row that
  adds it to, or takes it out of, the default.
- For less boilerplate at some recall, `max_link_density` (0.5 or 0.8) is the strongest rule; trafilatura
  stays selectable (`engine: trafilatura`, optionally `favor_precision: true`) at about ten times the cost.
- The boilerplate classifier rows (`max_boilerplate_probability`) use a logistic regression trained on the
  labelled blocks of the **even** pages (dev/boilerplate_classifier.py), so their whole-set and even
  figures include its training pages: read the odd (held-out) columns and readability, which it never saw.
- What leaks after main-content extraction is mostly inside the article region (photo credits, author boxes,
  "read also" lines, teasers, dates), out of reach of rules on whole regions or line positions.
- The class-name selector rows mostly hit containers that also hold the article, so they cost recall.
- The link-density filter also removes reference lists (Wikipedia "^ ... Retrieved ..." items); this is most of
  its cost in readability recall.
- Paragraph dedup's threshold is an absolute count of distinct documents in the whole corpus (CCNet's rule), so
  on a real crawl of millions of pages it removes what recurs across sites (cookie notices, ad labels, share
  bars) and every site's own chrome once the site has that many pages; on the gold it can only act on what
  recurs across unrelated pages. What leaks after main-content extraction is mostly page-specific, so it stays.
- Its cost on the gold is lines that genuinely recur in different pages but are main text there: the
  readability test set's lorem-ipsum fixture pages, short code lines ("}});", "}}") that break multi-line code
  snippets, and common headings; the lost snippets are listed per run above and in the JSON.
"""


def gold_set_figures(args: argparse.Namespace, data_dir: Path) -> dict:
    """Every row's figures on the trafilatura_eval and readability gold sets, the bounds, dedup and the grid."""
    gold = load_trafilatura_eval(data_dir / "html" / "trafilatura_eval")
    readability = load_readability(data_dir / "html" / "mozilla_readability")
    wanted = [word.strip() for word in args.rows.split(",") if word.strip()]
    rows = [row for row in ROWS if row.default or row.name.startswith("resiliparse main_content") or not wanted
            or any(word in row.name for word in wanted)]

    measured = []                     # (figures, gold-page texts) per row
    for row in rows:
        figures, gold_texts = measure(row, gold, readability, args.repeats)
        measured.append((figures, gold_texts))
        print(f"{row.name:70s} recall {figures['trafilatura_eval']['recall']:.3f} "
              f"leak {figures['trafilatura_eval']['leak']:.3f} {figures['ms_per_page']:.1f} ms/page", flush=True)
    results = [figures for figures, _ in measured]
    default = next(pair for pair, row in zip(measured, rows) if row.default)
    peer = next((pair for pair, row in zip(measured, rows) if row.html == FALLBACK_PEER), None)
    bound = fallback_bound(gold, *default, *peer) if peer else None
    options = [default] + [pair for pair, row in zip(measured, rows) if is_option_row(row) and not row.default]
    options_bound_figures = options_bound(gold, options)
    paragraphs = paragraph_dedup(gold, readability)
    points = [] if args.skip_grid else grid_search(gold)
    crawls = [measure_crawl(data_dir / name, name.split("/", 1)[1]) for name in SAME_HOST_CRAWLS]

    return {
        "repeats": args.repeats, "pages": len(gold) + len(readability),
        "counts": (f"trafilatura_eval {len(gold)} pages, {sum(len(p.with_snippets) for p in gold)} `with` / "
                   f"{sum(len(p.without_snippets) for p in gold)} `without` snippets; mozilla_readability "
                   f"{len(readability)} pages, {sum(len(p.with_snippets) for p in readability)} `with` / "
                   f"{sum(len(p.without_snippets) for p in readability)} `without` snippets"),
        # the figures: the default's recall and leak on each gold set, and the goal they are held to
        "recall": default[0]["trafilatura_eval"]["recall"], "leak": default[0]["trafilatura_eval"]["leak"],
        "default_by_gold_set": {name: {key: default[0][name][key] for key in ("recall", "leak")}
                                for name in ("trafilatura_eval", "trafilatura_eval_odd", "readability")},
        "goal": {"recall": TARGET_RECALL, "leak": TARGET_LEAK},
        "rows": results,
        "trafilatura_fallback_bound": bound,
        "resiliparse_options_bound": options_bound_figures,
        "paragraph_dedup": paragraphs,
        "grid_even_pages": points,
        "same_host_crawls": crawls,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="shared data (default: SLUICE_DATA_DIR or ../shared/data)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"default: {FULL_RESULT.name}, or {WCXB_RESULT.name} with --wcxb-only (in results/)")
    parser.add_argument("--wcxb-only", action="store_true",
                        help="measure only the WCXB section, into a file of its own (never merged into the full one)")
    parser.add_argument("--repeats", type=int, default=2, help="timing passes per row; the fastest counts")
    parser.add_argument("--rows", default="", help="only rows whose name contains one of these comma-separated "
                                                   "words (the default and peer rows always run)")
    parser.add_argument("--skip-grid", action="store_true", help="skip the threshold search (quick runs)")
    parser.add_argument("--articles", type=Path, default=ARTICLES,
                        help="a local copy of the Article Extraction Benchmark (dev/article_benchmark.py; left out "
                             "when missing)")
    args = parser.parse_args(argv)

    data_dir = args.data_dir or shared_data_dir()
    wcxb = measure_wcxb(data_dir / "html" / "wcxb")
    if args.wcxb_only:
        out, result, render = args.out or WCXB_RESULT, {"wcxb": wcxb}, render_wcxb_markdown
    else:
        others = {"trafilatura_eval_odd": load_trafilatura_eval(data_dir / "html" / "trafilatura_eval")[1::2],
                  # the other half of the sites trained the block selector (dev/block_selector.py)
                  "readability_heldout": heldout_half(load_readability(data_dir / "html" / "mozilla_readability")),
                  "article_extraction_benchmark": load_article_benchmark(args.articles)}
        result = gold_set_figures(args, data_dir) | {"wcxb": wcxb,
                                                     "labelled_sets": labelled_sets(wcxb["heldout"], others)}
        out, render = args.out or FULL_RESULT, render_markdown
    document = write_result(out, result, "extraction_quality.py", sys.argv[1:] if argv is None else argv)
    out.with_suffix(".md").write_text(render(document), encoding="utf-8")
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
