"""Main content chosen block by block from the whole page: a small gradient-boosted tree ensemble over the whole
page's blocks (tasks/extract/selector_features) that reads whether resiliparse's main-content extraction kept each
block and its neighbours, so that it can add what main content misses (list items, product details, the rest of a
listing) and drop what it lets through. Its trees and threshold are a data file (tasks/extract/models/
block_selector.json, written by dev/block_selector.py with LightGBM from the WCXB training split and the even-indexed
trafilatura_eval gold pages) whose content is in the extract stage's fingerprint (tasks/extract/model_files.py), so a
retrained model reruns the stage. The trees are evaluated here with numpy
(LightGBM is a dev dependency only), all blocks through all trees at once, one tree level a step."""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tasks.extract.model_files import BLOCK_SELECTOR, load_model
from tasks.extract.selector_features import FEATURE_NAMES, selector_features

MIN_MATCHED_SHARE = 0.5   # main content's text mostly absent from the whole page's blocks: keep main content


@dataclass(frozen=True)
class Forest:
    """The trees made complete binary trees of the deepest one's depth (a leaf above that depth becomes splits at
    +inf, which send every block left, down to the leaf), concatenated: tree t's node n is at t * nodes + n, node
    n's children are 2n + 1 (feature value <= threshold, as in LightGBM; the features are never NaN) and 2n + 2, and
    the last 2 ** depth nodes are leaves. A fixed depth needs no bookkeeping of which blocks reached a leaf: every
    level is the same three gathers over (trees, blocks)."""

    features: np.ndarray     # split feature of each node (0 at leaves)
    thresholds: np.ndarray   # split threshold of each node (+inf at leaves)
    values: np.ndarray       # leaf value of each node (0 at splits)
    depth: int
    nodes: int               # per tree: 2 ** (depth + 1) - 1


def forest(trees: Sequence[tuple]) -> Forest:
    """A Forest of trees given as LightGBM stores them: (split features, thresholds, left children, right
    children, leaf values), children >= 0 splits and < 0 leaves (~child)."""
    depth = max(_depth(tree, 0) for tree in trees)
    nodes = 2 ** (depth + 1) - 1
    features, values = np.zeros((len(trees), nodes), dtype=np.intp), np.zeros((len(trees), nodes))
    thresholds = np.full((len(trees), nodes), np.inf)
    for index, tree in enumerate(trees):
        _place(tree, 0 if tree[0] else -1, 0, depth, (features[index], thresholds[index], values[index]))
    return Forest(features.ravel(), thresholds.ravel(), values.ravel(), depth, nodes)


def _depth(tree: tuple, node: int) -> int:
    if node < 0 or not tree[0]:          # a leaf (a tree of one leaf has no splits)
        return 0
    return 1 + max(_depth(tree, tree[2][node]), _depth(tree, tree[3][node]))


def _place(tree: tuple, node: int, position: int, levels: int, tables: tuple[np.ndarray, ...]) -> None:
    """Write `node` of `tree` and what is below it at `position` of a complete tree with `levels` levels left."""
    features, thresholds, values = tables
    if levels == 0:
        values[position] = tree[4][~node]
        return
    left, right = (tree[2][node], tree[3][node]) if node >= 0 else (node, node)   # a leaf: itself, down the left
    if node >= 0:
        features[position], thresholds[position] = tree[0][node], tree[1][node]
    _place(tree, left, 2 * position + 1, levels - 1, tables)
    if node >= 0:
        _place(tree, right, 2 * position + 2, levels - 1, tables)


def log_odds(model: Forest, rows: np.ndarray) -> np.ndarray:
    """The sum of the leaves each row reaches, tree by tree (LightGBM's raw score)."""
    count = len(rows)
    values = np.ascontiguousarray(rows.T).ravel()        # feature f of row b at f * count + b
    columns = model.features * count
    trees = len(model.values) // model.nodes
    node = np.repeat(np.arange(trees)[:, None] * model.nodes, count, axis=1)   # (trees, rows): the roots
    shift = 1 - node[:, :1]                              # child = 2 * node + shift + went right, in place
    row = np.arange(count)
    for _ in range(model.depth):
        right = values.take(columns.take(node) + row) > model.thresholds.take(node)
        node *= 2
        node += shift
        node += right
    return model.values.take(node).sum(axis=0)


@functools.cache
def _model() -> tuple[Forest, float]:
    model = load_model(BLOCK_SELECTOR, FEATURE_NAMES)
    return forest(model["trees"]), model["threshold"]


def kept_by_main_content(whole_page: Sequence, main_content: Sequence) -> list[bool] | None:
    """Which of the whole page's blocks main content kept (its blocks matched in order, by text), or None when
    less than MIN_MATCHED_SHARE of main content's characters are found among them (e.g. forum posts that only
    main-content rendering reaches)."""
    positions: dict[str, list[int]] = {}
    for index, block in enumerate(whole_page):
        positions.setdefault(block.text, []).append(index)
    kept = [False] * len(whole_page)
    start = matched_chars = 0
    for block in main_content:
        later = [index for index in positions.get(block.text, ()) if index >= start]
        if later:
            kept[later[0]] = True
            start = later[0] + 1
            matched_chars += len(block.text)
    if matched_chars < MIN_MATCHED_SHARE * sum(len(block.text) for block in main_content):
        return None
    return kept


def probabilities(model: Forest, rows: np.ndarray) -> np.ndarray:
    """Per row of selector features, the model's probability that its block is main content."""
    return 1.0 / (1.0 + np.exp(-log_odds(model, rows)))


def main_content_probabilities(whole_page: Sequence, kept: Sequence[bool], html: str) -> np.ndarray:
    return probabilities(_model()[0], selector_features(whole_page, kept, html))


def selected_blocks(whole_page: Sequence, kept: Sequence[bool], html: str) -> list:
    """The whole page's blocks the model gives a probability of being main content above its threshold, in order."""
    threshold = _model()[1]
    return [block for block, probability in zip(whole_page, main_content_probabilities(whole_page, kept, html))
            if probability > threshold]
