"""The default extraction does not get worse on a small fixed sample of the gold pages (issue 46's regression test):
WCXB word F1 per page type on held-out pages, and `with` recall / `without` leak on trafilatura_eval pages.

The committed figures are the default's on this sample, measured when they were written (to refresh them after a
change that improves the sample, print `sample_figures(load_sample(data_dir), HtmlTextConfig())`); the full-set
figures are the extraction benchmark's (benchmarks/results/extraction_quality.json and extraction_wcxb.json).
"""
from __future__ import annotations

from pathlib import Path
from statistics import fmean

import pytest

from configs.html import HtmlTextConfig
from dev.gold_pages import Page, load_trafilatura_eval, score
from dev.wcxb import PAGE_TYPES, WcxbPage, has_gold, heldout_pages, load_wcxb, word_f1
from tasks.extract.html_text import html_to_text

WCXB_PAGES_PER_TYPE = 5          # the first held-out pages with a gold main text of each type, in file-id order
TRAFILATURA_EVAL_STEP = 10       # every 10th trafilatura_eval page, from the second (odd-indexed: held out)
# the default's figures on the sample at this commit, F1 and recall rounded down, leak rounded up (4 decimals). The
# block selector, retrained with readability's training half and its threshold chosen on the worst labelled set
# (dev/block_selector.py), moved them from product 0.6601, collection 0.5523, listing 0.8412, documentation 0.9664,
# service 0.9311 and leak 0.2215: a trade the full sets show (article pages of readability and the Article
# Extraction Benchmark up, listings and collections down; docs/stages.md)
COMMITTED_F1 = {"article": 0.9639, "forum": 0.6851, "product": 0.6300, "collection": 0.5239, "listing": 0.8295,
                "documentation": 0.9632, "service": 0.9283}
COMMITTED_RECALL = 0.9591
COMMITTED_LEAK = 0.2047


@pytest.fixture(scope="module")
def sample(data_dir):
    if not (data_dir / "html" / "wcxb" / "metadata.json").exists():
        pytest.skip("WCXB is not staged in the shared data (PROVENANCE.md section 9)")
    return load_sample(data_dir)


def load_sample(data_dir: Path) -> tuple[dict[str, list[WcxbPage]], list[Page]]:
    heldout = [page for page in heldout_pages(load_wcxb(data_dir / "html" / "wcxb")) if has_gold(page)]
    wcxb = {page_type: [page for page in heldout if page.page_type == page_type][:WCXB_PAGES_PER_TYPE]
            for page_type in PAGE_TYPES}
    gold = load_trafilatura_eval(data_dir / "html" / "trafilatura_eval")[1::TRAFILATURA_EVAL_STEP]
    return wcxb, gold


def sample_figures(sample, config: HtmlTextConfig) -> dict:
    wcxb, gold = sample
    snippets = score(gold, [html_to_text(page.html, config) for page in gold])
    return {"f1": {page_type: fmean(word_f1(html_to_text(page.html, config), page.main_content) for page in pages)
                   for page_type, pages in wcxb.items()},
            "recall": snippets["recall"], "leak": snippets["leak"]}


def shortfalls(figures: dict) -> list[str]:
    """What falls short of the committed figures."""
    missed = [f"{page_type} F1 {f1:.4f} < {COMMITTED_F1[page_type]:.4f}" for page_type, f1 in figures["f1"].items()
              if f1 < COMMITTED_F1[page_type]]
    if figures["recall"] < COMMITTED_RECALL:
        missed.append(f"trafilatura_eval recall {figures['recall']:.4f} < {COMMITTED_RECALL:.4f}")
    if figures["leak"] > COMMITTED_LEAK:
        missed.append(f"trafilatura_eval leak {figures['leak']:.4f} > {COMMITTED_LEAK:.4f}")
    return missed


def test_the_default_extraction_stays_at_or_above_the_committed_figures(sample):
    assert shortfalls(sample_figures(sample, HtmlTextConfig())) == []


def test_a_worse_extraction_falls_short_of_them(sample):
    """The bar can be missed: the whole page, without main-content heuristics, leaks far more boilerplate."""
    whole_page = sample_figures(sample, HtmlTextConfig(main_content=False))
    assert any("leak" in shortfall for shortfall in shortfalls(whole_page))
