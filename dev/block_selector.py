"""Train the main-content block selector and write its trees to tasks/extract/models/block_selector.json.

    .venv/bin/python -m dev.block_selector        # ~90 s on 2 cores (pages and folds in a process per core)

Training data: the whole page's blocks (html_text.selector_candidates) of
- the WCXB training split's pages with a gold main text (dev/wcxb.py; the held-out sites are never read): a block
  is main content when it is part of the gold text (GOLD_TRIGRAM_SHARE of its word trigrams in the gold's, or,
  under three words, its words in a row in the gold);
- the training half of mozilla_readability's sites (dev/readability_pages.py; the other half is held out), labelled
  the same way against readability.js's expected text and weighted READABILITY_WEIGHT a block: its article pages
  leave out what WCXB's articles rarely show (reader comments, related links);
- the even-indexed trafilatura_eval gold pages (the odd ones stay held out, as for every other extraction
  threshold), labelled by their snippets as in dev/boilerplate_classifier.py and weighted TRAFILATURA_WEIGHT a
  block: WCXB's gold keeps more of a page than trafilatura_eval's, whose leak the default must not raise.
The model is a small gradient-boosted tree ensemble (LightGBM, TREE_PARAMETERS: deterministic, one thread), classes
weighted to equal total weight as in dev/boilerplate_classifier.py's logistic regression, which it replaced (main
prints both's cross-validated F1). The threshold is chosen on the worst labelled set, not on the mean of one: in
5-fold cross-validation over the sites of the gold pages (`fold_of`), each labelled set (each WCXB page type, the
readability half) gets the mean word F1 of its pages at each of THRESHOLDS, less main content's (the extraction
the selector refines); the threshold whose lowest gain over the sets is highest wins, among those at which the
fitted model's trafilatura_eval even-page leak and recall are no worse than the default extraction's without it.
Gain over main content rather than margin over trafilatura: the two differ by a constant per set, and
trafilatura's F1 on every training page would cost this trainer (and its test) a minute. The written trees
are checked to give LightGBM's probabilities (to MAX_DEVIATION) on every training block through
tasks/extract/block_selector.py's numpy evaluation.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import sys
import timeit
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from statistics import fmean

import lightgbm
import numpy as np
from resiliparse.parse.html import HTMLTree

from configs.html import HtmlTextConfig
from dev.boilerplate_classifier import fit, holds_snippet
from dev.gold_pages import Page, load_trafilatura_eval, normalise, score
from dev.readability_pages import heldout_half, load_readability
from dev.wcxb import has_gold, load_wcxb, overlap_f1, tokens, train_pages, word_f1
from storage.locations import shared_data_dir
from tasks.extract.block_selector import forest, probabilities
from tasks.extract.html_text import main_content_blocks, selector_candidates
from tasks.extract.model_files import BLOCK_SELECTOR, write_model
from tasks.extract.selector_features import FEATURE_NAMES, selector_features

GOLD_TRIGRAM_SHARE = 0.5
TRAFILATURA_WEIGHT = 10.0      # the logistic regression's cross-validated F1 at its threshold 0.835 (30: 0.834)
READABILITY_WEIGHT = 10.0      # 60 pages beside WCXB's 1,026: weighted as trafilatura_eval's (3 and 30 measured)
FOLDS = 5
THRESHOLDS = tuple(round(0.3 + 0.05 * step, 2) for step in range(9))     # 0.3 ... 0.7
# Few, shallow trees: inference costs max_depth gathers over (ROUNDS, blocks). Tuned a little by the same
# cross-validation on the training split (best F1 over thresholds): max_depth 4 0.845, 3 0.844, 5 0.844, 6 0.844,
# none 0.845 (but ~13 levels to evaluate); 7 leaves 0.844; 100 rounds at rate 0.15 0.844; min_data_in_leaf 20 or
# 100, lambda_l2 1, rate 0.07: 0.844 each (differences of 0.001 are within noise); the logistic regression 0.837.
TREE_PARAMETERS = {"objective": "binary", "num_leaves": 15, "max_depth": 4, "min_data_in_leaf": 50,
                   "learning_rate": 0.1, "deterministic": True, "num_threads": 1, "force_row_wise": True,
                   "seed": 0, "verbose": -1}
ROUNDS = 150
MAX_DEVIATION = 1e-9           # of the numpy evaluation's probabilities from LightGBM's
Predictor = Callable[[np.ndarray], np.ndarray]     # selector features -> probabilities of main content
DESCRIPTION = ("A gradient-boosted tree ensemble (LightGBM) on tasks/extract/selector_features.py, fitted on the "
               "WCXB training split, readability's training half and the even-indexed trafilatura_eval gold pages; "
               "the threshold chosen on the worst labelled set in cross-validation. Per tree: split features, "
               "thresholds (a value <= the threshold goes left), left and right children (>= 0: a split, < 0: "
               "leaf ~child), leaf values; a block's log-odds is the sum of its leaves.")
TIMED_BLOCKS = 175             # the mean page's whole-page blocks (tasks/extract/selector_features.py)


@dataclass
class CandidatePage:
    """One page's whole-page blocks, their features and labels (1: main content, 0: not, -1: unknown)."""

    page: Page
    labelled_set: str                  # what the threshold is chosen on: a WCXB page type, "readability", ...
    weight: float                      # of each of its blocks in the fit
    default_text: str                  # the default extraction without the selector
    blocks: list | None                # None: the selector keeps main content (kept_by_main_content)
    features: np.ndarray
    labels: np.ndarray


def candidate_page(page: Page, labels_of, labelled_set: str = "", weight: float = 1.0) -> CandidatePage:
    """`labelled_set`: the page's WCXB page type when not given."""
    config = HtmlTextConfig()
    labelled_set = labelled_set or page.page_type
    tree = HTMLTree.parse(page.html)
    main_content = main_content_blocks(tree, config)
    default_text = "\n".join(block.text for block in main_content)
    candidates = selector_candidates(tree, main_content, config)
    if candidates is None:
        return CandidatePage(page, labelled_set, weight, default_text, None, np.zeros((0, len(FEATURE_NAMES))),
                             np.zeros(0))
    blocks, kept = candidates
    return CandidatePage(page, labelled_set, weight, default_text, blocks, selector_features(blocks, kept, page.html),
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
    return int(hashlib.sha256(page.site.encode()).hexdigest(), 16) % FOLDS


def training_set(gold: list[CandidatePage], trafilatura: list[CandidatePage]) -> tuple[np.ndarray, ...]:
    """Features, labels and row weights of the labelled blocks of the given pages."""
    pages = gold + trafilatura
    features = np.vstack([page.features for page in pages])
    labels = np.concatenate([page.labels for page in pages])
    weights = np.concatenate([np.full(len(page.labels), page.weight) for page in pages])
    known = labels >= 0
    return features[known], labels[known], weights[known]


def fit_trees(features: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> lightgbm.Booster:
    """The ensemble, rows weighted within their class and the classes to equal total weight (as `fit`), scaled to
    a mean of 1 so that min_data_in_leaf and the hessian bounds read as for unweighted rows."""
    balanced = weights * np.where(labels == 1, 1.0 / weights[labels == 1].sum(), 1.0 / weights[labels == 0].sum())
    data = lightgbm.Dataset(features, labels, weight=balanced * len(labels) / 2.0, params={"verbose": -1})
    return lightgbm.train(TREE_PARAMETERS, data, num_boost_round=ROUNDS)


def trees_of(booster: lightgbm.Booster) -> list[tuple]:
    """The booster's trees as tasks/extract/block_selector.forest reads them, from its text model (which writes
    thresholds and leaf values to 17 digits: exact)."""
    trees = []
    for text in booster.model_to_string().split("\nTree=")[1:]:
        fields = dict(line.split("=", 1) for line in text.split("\n\n")[0].split("\n")[1:])
        numbers = {name: fields[name].split() if name in fields else [] for name in
                   ("split_feature", "threshold", "decision_type", "left_child", "right_child", "leaf_value")}
        if any(int(kind) & ~2 for kind in numbers["decision_type"]):   # only `<=` splits, no missing values
            raise ValueError("a categorical split or one with a missing-value direction: not evaluated")
        trees.append((tuple(map(int, numbers["split_feature"])), tuple(map(float, numbers["threshold"])),
                      tuple(map(int, numbers["left_child"])), tuple(map(int, numbers["right_child"])),
                      tuple(map(float, numbers["leaf_value"]))))
    return trees


def checked(booster: lightgbm.Booster, pages: list[CandidatePage]) -> list[tuple]:
    """trees_of(booster), once their numpy evaluation gives LightGBM's probabilities on the pages' blocks."""
    trees = trees_of(booster)
    model = forest(trees)
    rows = [page.features for page in pages if page.blocks]
    deviation = np.abs(np.concatenate([probabilities(model, features) for features in rows])
                       - booster.predict(np.vstack(rows))).max()
    if deviation > MAX_DEVIATION:
        raise AssertionError(f"the numpy trees deviate from LightGBM's by {deviation:.3g}")
    return trees


def tree_predictor(features: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> Predictor:
    model = forest(trees_of(fit_trees(features, labels, weights)))
    return lambda rows: probabilities(model, rows)


def linear_predictor(features: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> Predictor:
    """The logistic regression the trees replaced, for comparison."""
    bias, coefficients = fit(features, labels, sample_weights=weights)
    return lambda rows: 1.0 / (1.0 + np.exp(-(bias + rows @ coefficients)))


def texts_at(pages: list[CandidatePage], predict: Predictor, thresholds: Iterable[float]) -> dict[float, list[str]]:
    """Each page's text at each threshold: the blocks whose probability is above it (each page predicted once)."""
    texts: dict[float, list[str]] = {threshold: [] for threshold in thresholds}
    for page in pages:
        if page.blocks is None:
            for found in texts.values():
                found.append(page.default_text)
            continue
        probability = predict(page.features)
        for threshold, found in texts.items():
            found.append("\n".join(block.text for block, keep in zip(page.blocks, probability > threshold) if keep))
    return texts


def cross_validated_scores(gold: list[CandidatePage], trafilatura: list[CandidatePage],
                           train: Callable[..., Predictor] = tree_predictor) -> dict[float, dict[str, list[float]]]:
    """Word F1 per threshold and labelled set, each gold page scored by the model fitted without its site's fold."""
    scores: dict[float, dict[str, list[float]]] = {threshold: {} for threshold in THRESHOLDS}
    folds = [[page for page in gold if fold_of(page.page) == fold] for fold in range(FOLDS)]
    fitted = [training_set([page for page in gold if fold_of(page.page) != fold], trafilatura) for fold in range(FOLDS)]
    with worker_processes() as pool:
        for fold_scores in pool.map(partial(tested_fold_scores, train=train), fitted, folds):
            for threshold, page_scores in fold_scores.items():
                for labelled_set, f1 in page_scores:
                    scores[threshold].setdefault(labelled_set, []).append(f1)
    return scores


def tested_fold_scores(training: tuple[np.ndarray, ...], tested: list[CandidatePage],
                       train: Callable[..., Predictor]) -> dict[float, list[tuple[str, float]]]:
    """(labelled set, word F1) of each tested page, per threshold, under the model `train` fits on `training`."""
    texts = texts_at(tested, train(*training), THRESHOLDS)
    scores: dict[float, list[tuple[str, float]]] = {threshold: [] for threshold in THRESHOLDS}
    for index, page in enumerate(tested):
        wanted, f1_of = Counter(tokens(page.page.main_content)), {}   # neighbouring thresholds often keep the same text
        for threshold in THRESHOLDS:
            text = texts[threshold][index]
            if text not in f1_of:
                f1_of[text] = overlap_f1(Counter(tokens(text)), wanted)
            scores[threshold].append((page.labelled_set, f1_of[text]))
    return scores


def gains_over_main_content(scores: dict[float, dict[str, list[float]]],
                            gold: list[CandidatePage]) -> dict[float, dict[str, float]]:
    """Per threshold and labelled set: the cross-validated mean F1 less main content's on the same pages."""
    main_content: dict[str, list[float]] = {}
    for page in gold:
        main_content.setdefault(page.labelled_set, []).append(word_f1(page.default_text, page.page.main_content))
    return {threshold: {name: fmean(f1) - fmean(main_content[name]) for name, f1 in by_set.items()}
            for threshold, by_set in scores.items()}


def best_threshold(gains: dict[float, dict[str, float]], thresholds: Iterable[float] = THRESHOLDS) -> float:
    """Of `thresholds`, the one whose worst labelled set gains most over main content."""
    return max(thresholds, key=lambda threshold: min(gains[threshold].values()))


def chosen_threshold(gains: dict[float, dict[str, float]], predict: Predictor,
                     trafilatura: list[CandidatePage]) -> float:
    """The threshold whose worst set gains most over main content, of those that keep trafilatura_eval's leak and
    recall."""
    pages = [page.page for page in trafilatura]
    today = score(pages, [page.default_text for page in trafilatura])
    allowed = []
    for threshold, texts in texts_at(trafilatura, predict, THRESHOLDS).items():
        figures = score(pages, texts)
        worst = min(gains[threshold], key=gains[threshold].get)
        print(f"threshold {threshold}: worst cross-validated gain over main content {gains[threshold][worst]:+.4f} "
              f"({worst}), trafilatura_eval even recall {figures['recall']:.4f} leak {figures['leak']:.4f} "
              f"(default {today['recall']:.4f} {today['leak']:.4f})")
        if figures["leak"] <= today["leak"] and figures["recall"] >= today["recall"]:
            allowed.append(threshold)
    if not allowed:
        raise SystemExit("no threshold keeps trafilatura_eval's leak and recall: nothing to ship")
    return best_threshold(gains, allowed)


def candidate_pages(data_dir: Path) -> tuple[list[CandidatePage], list[CandidatePage]]:
    """The gold pages (WCXB's training split, labelled by page type, and readability's training half) and the
    even-indexed trafilatura_eval pages."""
    wcxb = [page for page in train_pages(load_wcxb(data_dir / "html" / "wcxb")) if has_gold(page)]
    readability = heldout_half(load_readability(data_dir / "html" / "mozilla_readability"), heldout=False)
    trafilatura = load_trafilatura_eval(data_dir / "html" / "trafilatura_eval")[::2]
    with worker_processes() as pool:
        gold = [*pool.map(partial(candidate_page, labels_of=gold_labels), wcxb, chunksize=16),
                *pool.map(partial(candidate_page, labels_of=gold_labels, labelled_set="readability",
                                  weight=READABILITY_WEIGHT), readability, chunksize=4)]
        snippets = partial(candidate_page, labels_of=snippet_labels, labelled_set="trafilatura_eval",
                           weight=TRAFILATURA_WEIGHT)
        return gold, list(pool.map(snippets, trafilatura, chunksize=16))


def worker_processes() -> ProcessPoolExecutor:
    """A process per core for the independent steps (each page's blocks, each fold's fit): the results and their
    order are those of one process, as each step is deterministic alone (LightGBM on one thread). Spawned, not
    forked: a fork after LightGBM has run in this process may inherit its OpenMP state."""
    return ProcessPoolExecutor(os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn"))


def trained(gold: list[CandidatePage], trafilatura: list[CandidatePage],
            gains: dict[float, dict[str, float]] | None = None) -> tuple[list[tuple], float, int]:
    """The trees, their threshold and how many labelled blocks they were fitted on (`gains`: the trees'
    gains_over_main_content, when already computed)."""
    features, labels, weights = training_set(gold, trafilatura)
    trees = checked(fit_trees(features, labels, weights), gold + trafilatura)
    model = forest(trees)
    gains = gains or gains_over_main_content(cross_validated_scores(gold, trafilatura), gold)
    return trees, chosen_threshold(gains, lambda rows: probabilities(model, rows), trafilatura), len(labels)


def main() -> int:
    gold, trafilatura = candidate_pages(shared_data_dir())
    gains = {}
    for name, train in (("logistic regression", linear_predictor), ("trees", tree_predictor)):
        gains = gains_over_main_content(cross_validated_scores(gold, trafilatura, train), gold)
        best = best_threshold(gains)
        print(f"{name}: best worst-set cross-validated gain over main content {min(gains[best].values()):+.4f} at "
              f"{best} (" + ", ".join(f"{kind} {gain:+.3f}" for kind, gain in sorted(gains[best].items())) + ")")
    trees, threshold, blocks = trained(gold, trafilatura, gains)       # the trees' gains, computed last
    path = write_model(BLOCK_SELECTOR, "dev/block_selector.py", DESCRIPTION, FEATURE_NAMES, blocks=blocks,
                       threshold=threshold, trees=trees)
    print(f"{blocks} blocks, {len(trees)} trees, threshold {threshold} -> {path}")
    print(f"numpy evaluation: {evaluation_ms(forest(trees), gold):.2f} ms for a page of {TIMED_BLOCKS} blocks")
    return 0


def evaluation_ms(model, pages: list[CandidatePage]) -> float:
    """The fastest of repeated evaluations of the page with the block count nearest TIMED_BLOCKS, in ms."""
    rows = min((page.features for page in pages if page.blocks), key=lambda rows: abs(len(rows) - TIMED_BLOCKS))
    return min(timeit.repeat(lambda: probabilities(model, rows), number=200, repeat=5)) / 200 * 1e3


if __name__ == "__main__":
    sys.exit(main())
