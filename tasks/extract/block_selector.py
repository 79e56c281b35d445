"""Main content chosen block by block from the whole page: a logistic regression over the whole page's blocks
(tasks/extract/selector_features) that reads whether resiliparse's main-content extraction kept each block and
its neighbours, so that it can add what main content misses (list items, product details, the rest of a listing)
and drop what it lets through. Its weights and threshold are generated (tasks/extract/block_selector_weights.py,
by dev/block_selector.py from the WCXB training split and the even-indexed trafilatura_eval gold pages), so a
retrained model changes the extract stage's code version and reruns it."""
from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from tasks.extract.selector_features import FEATURE_NAMES, selector_features

MIN_MATCHED_SHARE = 0.5   # main content's text mostly absent from the whole page's blocks: keep main content


@functools.cache
def _model() -> tuple[float, np.ndarray, float]:
    # imported when first used, so that the trainer runs whatever the weights file holds
    from tasks.extract.block_selector_weights import BIAS, FEATURES, THRESHOLD, WEIGHTS

    if FEATURES != FEATURE_NAMES:
        raise ValueError("tasks/extract/block_selector_weights.py was trained on other features: run "
                         "dev/block_selector.py")
    return BIAS, np.array(WEIGHTS), THRESHOLD


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


def main_content_probabilities(whole_page: Sequence, kept: Sequence[bool], html: str) -> np.ndarray:
    bias, weights, _ = _model()
    return 1.0 / (1.0 + np.exp(-(bias + selector_features(whole_page, kept, html) @ weights)))


def selected_blocks(whole_page: Sequence, kept: Sequence[bool], html: str) -> list:
    """The whole page's blocks the model gives a probability of being main content above its threshold, in order."""
    threshold = _model()[2]
    return [block for block, probability in zip(whole_page, main_content_probabilities(whole_page, kept, html))
            if probability > threshold]
