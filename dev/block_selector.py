"""Train the main-content block selector and write tasks/extract/block_selector_weights.py.

    .venv/bin/python -m dev.block_selector        # ~45 s

Training data: the whole page's blocks (html_text.selector_candidates) of
- the WCXB training split's pages with a gold main text (dev/wcxb.py; the held-out sites are never read): a block
  is main content when it is part of the gold text (GOLD_TRIGRAM_SHARE of its word trigrams in the gold's, or,
  under three words, its words in a row in the gold);
- the even-indexed trafilatura_eval gold pages (the odd ones stay held out, as for every other extraction
  threshold), labelled by their snippets as in dev/boilerplate_classifier.py and weighted TRAFILATURA_WEIGHT a
  block: WCXB's gold keeps more of a page than trafilatura_eval's, whose leak the default must not raise.
The model is dev/boilerplate_classifier.py's logistic regression. The threshold is the one of THRESHOLDS with the
best WCXB word F1 in 5-fold cross-validation over the training split's sites (`fold_of`), among those at which the
fitted model's trafilatura_eval even-page leak and recall are no worse than the default extraction's without it.
"""
from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

import numpy as np
from resiliparse.parse.html import HTMLTree

from configs.html import HtmlTextConfig
from dev.boilerplate_classifier import fit, holds_snippet, weights_module_source
from dev.gold_pages import Page, load_trafilatura_eval, normalise, score
from dev.wcxb import has_gold, load_wcxb, site_of, tokens, train_pages, word_f1
from storage.locations import shared_data_dir
from tasks.extract.html_text import main_content_blocks, selector_candidates
from tasks.extract.selector_features import FEATURE_NAMES, selector_features

WEIGHTS_MODULE = Path(__file__).resolve().parents[1] / "tasks" / "extract" / "block_selector_weights.py"
GOLD_TRIGRAM_SHARE = 0.5
TRAFILATURA_WEIGHT = 10.0      # cross-validated F1 at its threshold 0.835 (30: 0.834)
FOLDS = 5
THRESHOLDS = tuple(round(0.3 + 0.05 * step, 2) for step in range(9))     # 0.3 ... 0.7


@dataclass
class CandidatePage:
    """One page's whole-page blocks, their features and labels (1: main content, 0: not, -1: unknown)."""

    page: Page
    default_text: str                  # the default extraction without the selector
    blocks: list | None                # None: the selector keeps main content (kept_by_main_content)
    features: np.ndarray
    labels: np.ndarray


def candidate_page(page: Page, labels_of) -> CandidatePage:
    config = HtmlTextConfig()
    tree = HTMLTree.parse(page.html)
    main_content = main_content_blocks(tree, config)
    default_text = "\n".join(block.text for block in main_content)
    candidates = selector_candidates(tree, main_content, config)
    if candidates is None:
        return CandidatePage(page, default_text, None, np.zeros((0, len(FEATURE_NAMES))), np.zeros(0))
    blocks, kept = candidates
    return CandidatePage(page, default_text, blocks, selector_features(blocks, kept, page.html),
                         np.array(labels_of(page, blocks), dtype=np.float64))


def gold_labels(page, blocks) -> list[int]:
    """WCXB: 1 for the blocks that are part of the page's gold main text, else 0."""
    gold = tokens(page.main_content)
    gold_text, gold_trigrams = f" {' '.join(gold)} ", set(zip(gold, gold[1:], gold[2:]))
    labels = []
    for block in blocks:
        words = tokens(block.text)
        if len(words) < 3:
            labels.append(int(bool(words) and f" {' '.join(words)} " in gold_text))
        else:
            trigrams = list(zip(words, words[1:], words[2:]))
            in_gold = sum(trigram in gold_trigrams for trigram in trigrams)
            labels.append(int(in_gold >= GOLD_TRIGRAM_SHARE * len(trigrams)))
    return labels


def snippet_labels(page: Page, blocks) -> list[int]:
    """trafilatura_eval: 1 for a block holding a `with` snippet and no `without` one, 0 the other way, else -1."""
    labels = []
    for block in blocks:
        text = normalise(block.text)
        main, boilerplate = holds_snippet(text, page.with_snippets), holds_snippet(text, page.without_snippets)
        labels.append(-1 if main == boilerplate else int(main))
    return labels


def fold_of(page) -> int:
    return int(hashlib.sha256(site_of(page.domain).encode()).hexdigest(), 16) % FOLDS


def training_set(wcxb: list[CandidatePage], trafilatura: list[CandidatePage]) -> tuple[np.ndarray, ...]:
    """Features, labels and row weights of the labelled blocks of the given pages."""
    features = np.vstack([page.features for page in wcxb + trafilatura])
    labels = np.concatenate([page.labels for page in wcxb + trafilatura])
    weights = np.concatenate([np.full(len(page.labels), weight) for pages, weight in
                              ((wcxb, 1.0), (trafilatura, TRAFILATURA_WEIGHT)) for page in pages])
    known = labels >= 0
    return features[known], labels[known], weights[known]


def texts_at(pages: list[CandidatePage], model: tuple[float, np.ndarray], threshold: float) -> list[str]:
    bias, weights = model
    texts = []
    for page in pages:
        if page.blocks is None:
            texts.append(page.default_text)
            continue
        probabilities = 1.0 / (1.0 + np.exp(-(bias + page.features @ weights)))
        texts.append("\n".join(block.text for block, p in zip(page.blocks, probabilities) if p > threshold))
    return texts


def cross_validated_f1(wcxb: list[CandidatePage], trafilatura: list[CandidatePage]) -> dict[float, float]:
    """WCXB word F1 per threshold, each page scored by the model fitted without its site's fold."""
    scores: dict[float, list[float]] = {threshold: [] for threshold in THRESHOLDS}
    for fold in range(FOLDS):
        fitted = [page for page in wcxb if fold_of(page.page) != fold]
        tested = [page for page in wcxb if fold_of(page.page) == fold]
        features, labels, weights = training_set(fitted, trafilatura)
        model = fit(features, labels, sample_weights=weights)
        for threshold in THRESHOLDS:
            scores[threshold] += [word_f1(text, page.page.main_content)
                                  for page, text in zip(tested, texts_at(tested, model, threshold))]
    return {threshold: fmean(values) for threshold, values in scores.items()}


def chosen_threshold(cv_f1: dict[float, float], model, trafilatura: list[CandidatePage]) -> float:
    pages = [page.page for page in trafilatura]
    today = score(pages, [page.default_text for page in trafilatura])
    allowed = []
    for threshold in THRESHOLDS:
        figures = score(pages, texts_at(trafilatura, model, threshold))
        print(f"threshold {threshold}: WCXB cross-validated F1 {cv_f1[threshold]:.4f}, trafilatura_eval even "
              f"recall {figures['recall']:.4f} leak {figures['leak']:.4f} (default {today['recall']:.4f} "
              f"{today['leak']:.4f})")
        if figures["leak"] <= today["leak"] and figures["recall"] >= today["recall"]:
            allowed.append(threshold)
    if not allowed:
        raise SystemExit("no threshold keeps trafilatura_eval's leak and recall: nothing to ship")
    return max(allowed, key=lambda threshold: cv_f1[threshold])


def candidate_pages(data_dir: Path) -> tuple[list[CandidatePage], list[CandidatePage]]:
    wcxb = [candidate_page(page, gold_labels)
            for page in train_pages(load_wcxb(data_dir / "html" / "wcxb")) if has_gold(page)]
    trafilatura = [candidate_page(page, snippet_labels)
                   for page in load_trafilatura_eval(data_dir / "html" / "trafilatura_eval")[::2]]
    return wcxb, trafilatura


def module_source(bias: float, weights: np.ndarray, threshold: float, blocks: int) -> str:
    return weights_module_source(
        f"Generated by dev/block_selector.py: do not edit. A logistic regression on\n"
        f"tasks/extract/selector_features.py, fitted on {blocks} labelled blocks of the WCXB training split\n"
        f"and the even-indexed trafilatura_eval gold pages; THRESHOLD chosen by cross-validation.", FEATURE_NAMES,
        weights, {"THRESHOLD": threshold, "BIAS": bias})


def main() -> int:
    wcxb, trafilatura = candidate_pages(shared_data_dir())
    features, labels, weights = training_set(wcxb, trafilatura)
    model = fit(features, labels, sample_weights=weights)
    print(f"default extraction: WCXB training split F1 "
          f"{fmean(word_f1(page.default_text, page.page.main_content) for page in wcxb):.4f}")
    threshold = chosen_threshold(cross_validated_f1(wcxb, trafilatura), model, trafilatura)
    WEIGHTS_MODULE.write_text(module_source(*model, threshold, len(labels)))
    print(f"{len(labels)} blocks, threshold {threshold} -> {WEIGHTS_MODULE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
