"""The default extraction against main content alone, Resiliparse and Trafilatura on every labelled set this project
has (issue 63): per set, and per WCXB page type with at least MIN_TYPE_PAGES held-out pages, each extractor's word
F1 against the gold text where the set has one, `with` recall and `without` leak where it has snippets, and CPU ms
per page; then the default's margin over Trafilatura on its worst set and its time against main content's.

The sets: WCXB's held-out sites (dev/wcxb.py: F1 and snippets), trafilatura_eval's odd pages (snippets only; the
even ones tuned the extraction's thresholds), mozilla_readability (F1 against readability.js's expected text, and
snippets), and the Article Extraction Benchmark when a local copy is there (dev/article_benchmark.py: F1 only)."""
from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import version
from statistics import fmean

import trafilatura
from resiliparse.extract.html2text import extract_plain_text

from configs.html import HtmlTextConfig
from dev.gold_pages import Page, score
from dev.wcxb import PAGE_TYPES, word_f1
from tasks.extract.html_text import html_to_text

MIN_TYPE_PAGES = 25        # the bar for a WCXB page type to count as a set of its own
DEFAULT = HtmlTextConfig()
MAIN_CONTENT = HtmlTextConfig(block_selector=False)      # the default before the block selector


def _default_extraction(html: str) -> str:
    return html_to_text(html, DEFAULT)


def _main_content(html: str) -> str:
    return html_to_text(html, MAIN_CONTENT)


def _resiliparse_main_content(html: str) -> str:
    return extract_plain_text(html, main_content=True)


def _trafilatura_defaults(html: str) -> str:
    return trafilatura.extract(html) or ""


EXTRACTORS: dict[str, tuple[str, Callable[[str], str]]] = {
    "default": ("html_to_text(html, HtmlTextConfig()): the block selector", _default_extraction),
    "main content": ("html_to_text(html, HtmlTextConfig(block_selector=False))", _main_content),
    "resiliparse": (f"resiliparse {version('resiliparse')}: extract_plain_text(html, main_content=True)",
                    _resiliparse_main_content),
    "trafilatura": (f"trafilatura {version('trafilatura')}: trafilatura.extract(html), default settings",
                    _trafilatura_defaults),
}


def timed_texts(pages: list[Page], extractor: Callable[[str], str]) -> tuple[list[str], list[float]]:
    """`extractor`'s text of every page and the CPU seconds each took (after a warm-up call: lazy imports)."""
    extractor(pages[0].html)
    texts, seconds = [], []
    for page in pages:
        started = time.process_time()
        texts.append(extractor(page.html))
        seconds.append(time.process_time() - started)
    return texts, seconds


def set_figures(pages: list[Page], texts: list[str], seconds: list[float]) -> dict:
    """F1 when the pages have a gold text (`main_content`), snippet figures when they have snippets."""
    figures = {"pages": len(pages), "f1": None, "with_recall": None, "without_leak": None,
               "ms_per_page": 1000 * sum(seconds) / len(pages)}
    if hasattr(pages[0], "main_content"):
        figures["f1"] = fmean(word_f1(text, page.main_content) for page, text in zip(pages, texts))
    if any(page.with_snippets or page.without_snippets for page in pages):
        snippets = score(pages, texts)
        figures |= {"with_recall": snippets["recall"], "without_leak": snippets["leak"]}
    return figures


def labelled_sets(wcxb_heldout: dict, others: dict[str, list[Page]]) -> dict:
    """Each set's figures per extractor (`wcxb_heldout`: measure_wcxb's held-out side, already measured; `others`:
    name -> pages), the worst set's margin and the time against main content."""
    sets = {"wcxb_heldout": {name: _without_types(figures) for name, figures in wcxb_heldout.items()}}
    for page_type in PAGE_TYPES:
        if wcxb_heldout["default"]["by_type"][page_type]["pages"] >= MIN_TYPE_PAGES:
            sets[f"wcxb_heldout_{page_type}"] = {name: figures["by_type"][page_type]
                                                 for name, figures in wcxb_heldout.items()}
    for set_name, pages in others.items():
        if not pages:
            continue
        sets[set_name] = {}
        for name, (_, extractor) in EXTRACTORS.items():
            sets[set_name][name] = set_figures(pages, *timed_texts(pages, extractor))
            print(f"{set_name} {name:12s} {_cells(sets[set_name][name])}", flush=True)
    return {"extractors": {name: description for name, (description, _) in EXTRACTORS.items()}, "sets": sets,
            **worst_set_margins(sets), "time_vs_main_content": time_against_main_content(sets)}


def _without_types(figures: dict) -> dict:
    return {key: value for key, value in figures.items() if key != "by_type"}


def worst_set_margins(sets: dict) -> dict:
    """The default's F1 minus Trafilatura's on the set where it is lowest, and its `without` leak minus
    Trafilatura's on the set where that is highest (the sets with snippets)."""
    f1 = {name: by["default"]["f1"] - by["trafilatura"]["f1"] for name, by in sets.items()
          if by["default"]["f1"] is not None}
    leak = {name: by["default"]["without_leak"] - by["trafilatura"]["without_leak"] for name, by in sets.items()
            if by["default"]["without_leak"] is not None}
    worst_f1, worst_leak = min(f1, key=f1.get), max(leak, key=leak.get)
    return {"worst_set_margin_vs_trafilatura": f1[worst_f1], "worst_set": worst_f1,
            "worst_leak_over_trafilatura": leak[worst_leak], "worst_leak_set": worst_leak}


def time_against_main_content(sets: dict) -> float:
    """The default's CPU time over main content's, on all pages of the sets (not the WCXB types twice)."""
    whole = [by for name, by in sets.items() if not name.startswith("wcxb_heldout_")]
    return (sum(by["default"]["ms_per_page"] * by["default"]["pages"] for by in whole)
            / sum(by["main content"]["ms_per_page"] * by["main content"]["pages"] for by in whole))


def _cells(figures: dict) -> str:
    """F1 / `with` recall / `without` leak / ms per page, a dash where the set has no such label."""
    return " / ".join("-" if figures[key] is None else f"{figures[key]:.3f}"
                      for key in ("f1", "with_recall", "without_leak")) + f" / {figures['ms_per_page']:.1f}"


def labelled_sets_section(result: dict) -> list[str]:
    """The Markdown of `labelled_sets`' result: one row per set, a cell per extractor, and the two margins."""
    names = list(result["extractors"])
    lines = ["Each cell: F1 / `with` recall / `without` leak / CPU ms per page (a dash: the set has no such label).",
             "", "| set | pages | " + " | ".join(names) + " |", "|---|---:|" + "---|" * len(names)]
    for set_name, by in result["sets"].items():
        lines.append(f"| {set_name} | {by['default']['pages']} | "
                     + " | ".join(_cells(by[name]) for name in names) + " |")
    return lines + ["", f"The default's F1 minus Trafilatura's on its worst set ({result['worst_set']}): "
                        f"**{result['worst_set_margin_vs_trafilatura']:+.3f}**; its `without` leak minus "
                        f"Trafilatura's where that is highest ({result['worst_leak_set']}): "
                        f"{result['worst_leak_over_trafilatura']:+.3f}; its CPU time against main content's: "
                        f"**{result['time_vs_main_content']:.2f}x**."]
