"""Train the boilerplate-block classifier and write its weights to tasks/extract/models/boilerplate_classifier.json.

    .venv/bin/python -m dev.boilerplate_classifier        # ~15 s

Training data: the even-indexed pages of the trafilatura_eval gold set (the odd ones stay held out, as for every
other extraction threshold), extracted with the default HTML config without the classifier. A block is labelled
boilerplate when it holds one of its page's `without` snippets (or is a part of one) and none of its `with`
snippets, main text in the opposite case; other blocks are not used. The model is a logistic regression on the
standardised features of tasks/extract/block_features.py, classes weighted to equal total weight, a small L2
penalty, fitted by Newton's method (deterministic: same pages, same weights); the standardisation is folded into
the written weights.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from configs.html import HtmlTextConfig
from dev.gold_pages import load_trafilatura_eval, normalise
from storage.locations import shared_data_dir
from tasks.extract.block_features import FEATURE_NAMES, block_features
from tasks.extract.html_text import page_blocks
from tasks.extract.model_files import BOILERPLATE_CLASSIFIER, write_model

L2 = 1e-3               # on the standardised weights, against a total sample weight of 2 (one per class)
MIN_PART_CHARS = 16      # a block this long inside a snippet counts as part of it
DESCRIPTION = ("A logistic regression on tasks/extract/block_features.py (a block's probability of being "
               "boilerplate: the sigmoid of bias + weights . features), fitted on the even-indexed trafilatura_eval "
               "gold pages' labelled blocks.")


def labelled_blocks(data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels (1: boilerplate) of the blocks of the even-indexed gold pages."""
    config = HtmlTextConfig()
    rows, labels = [], []
    for page in load_trafilatura_eval(data_dir / "html" / "trafilatura_eval")[::2]:
        blocks = page_blocks(page.html, config)
        for block, row in zip(blocks, block_features(blocks)):
            text = normalise(block.text)
            boilerplate, main = holds_snippet(text, page.without_snippets), holds_snippet(text, page.with_snippets)
            if boilerplate != main:
                rows.append(row)
                labels.append(int(boilerplate))
    return np.array(rows, dtype=np.float64), np.array(labels, dtype=np.float64)


def holds_snippet(text: str, snippets: list[str]) -> bool:
    return any(snippet in text or (len(text) >= MIN_PART_CHARS and text in snippet) for snippet in snippets)


def fit(features: np.ndarray, labels: np.ndarray, steps: int = 50,
        sample_weights: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """(bias, weights) on the raw features of a class-balanced, L2-penalised logistic regression; `sample_weights`
    (default: all 1) weigh rows within their class, whose totals stay equal."""
    mean, scale = features.mean(axis=0), features.std(axis=0)
    scale[scale == 0] = 1.0
    design = np.hstack([np.ones((len(labels), 1)), (features - mean) / scale])
    row_weights = np.ones(len(labels)) if sample_weights is None else sample_weights
    sample = row_weights * np.where(labels == 1, 1.0 / row_weights[labels == 1].sum(),
                                    1.0 / row_weights[labels == 0].sum())
    penalty = np.full(design.shape[1], L2)
    penalty[0] = 0.0                                   # the intercept is not penalised
    theta = np.zeros(design.shape[1])
    for _ in range(steps):
        probability = 1.0 / (1.0 + np.exp(-design @ theta))
        gradient = design.T @ (sample * (probability - labels)) + penalty * theta
        hessian = (design * (sample * probability * (1 - probability))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-12:
            break
    weights = theta[1:] / scale
    return float(theta[0] - (weights * mean).sum()), weights


def main() -> int:
    features, labels = labelled_blocks(shared_data_dir())
    bias, weights = fit(features, labels)
    path = write_model(BOILERPLATE_CLASSIFIER, "dev/boilerplate_classifier.py", DESCRIPTION, FEATURE_NAMES,
                       blocks=len(labels), boilerplate_blocks=int(labels.sum()), bias=bias, weights=weights.tolist())
    print(f"{len(labels)} blocks ({int(labels.sum())} boilerplate) -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
