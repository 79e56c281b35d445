"""The main-content block selector (tasks/extract/block_selector.py, HtmlTextConfig.block_selector): its features,
how it lines up main content with the whole page, and the committed model, reproduced from its trainer."""
from __future__ import annotations

import numpy as np
import pytest

from configs.html import HtmlTextConfig
from tasks.extract.block_selector import kept_by_main_content
from tasks.extract.html_text import Block, html_to_text
from tasks.extract.selector_features import FEATURE_NAMES, selector_features


def blocks(*texts: str) -> list[Block]:
    return [Block(text) for text in texts]


def test_main_content_is_matched_in_order_among_the_whole_page_blocks():
    whole_page = blocks("Menu", "Title", "Menu", "Body text of the page.", "Footer")
    assert kept_by_main_content(whole_page, blocks("Title", "Menu", "Body text of the page.")) \
        == [False, True, True, True, False]          # the "Menu" after "Title", not the first one


def test_main_content_mostly_missing_from_the_whole_page_is_kept_as_it_is():
    whole_page = blocks("Menu", "Footer")
    assert kept_by_main_content(whole_page, blocks("A forum post only main-content rendering reaches.", "Menu")) \
        is None


def test_features_read_the_block_its_place_and_what_main_content_kept():
    page = blocks("Home", "A sentence of the article, long enough to read like prose.", "Home", "2024 © Site")
    rows = selector_features(page, [False, True, False, False], '{"@type": "Product"}')
    assert rows.shape == (4, len(FEATURE_NAMES))
    feature = {name: rows[:, index].tolist() for index, name in enumerate(FEATURE_NAMES)}
    assert feature["kept"] == [0, 1, 0, 0]
    assert feature["before_kept_span"] == [1, 0, 0, 0] and feature["after_kept_span"] == [0, 0, 1, 1]
    assert feature["log_blocks_to_kept"] == pytest.approx(np.log1p([1, 0, 1, 2]).tolist())
    assert feature["kept_share_nearby"] == pytest.approx([1 / 3, 0, 1 / 3, 1 / 3])
    assert feature["log_repeats"] == pytest.approx([np.log(2), 0, np.log(2), 0])
    assert feature["reads_like_prose"] == [0, 1, 0, 0] and feature["has_year"] == [0, 0, 0, 1]
    assert feature["product_page"] == [1, 1, 1, 1] and feature["kept_on_product_page"] == [0, 1, 0, 0]
    assert feature["link_density_before"][0] == 1.0 and feature["log_chars_after"][-1] == 0.0


def test_the_selector_is_off_by_default_and_chooses_from_the_whole_page_when_on():
    article = " ".join(["This sentence belongs to the article and reads like prose."] * 3)
    page = (f"<html><body><nav><a href='/'>Home</a></nav><main><h1>Title</h1><p>{article}</p>"
            f"<p>{article}</p></main></body></html>")
    assert not HtmlTextConfig().block_selector
    selected = html_to_text(page, HtmlTextConfig(block_selector=True))
    assert article in selected and "Home" not in selected


def test_retraining_gives_the_committed_selector(data_dir):
    """The weights and the threshold are generated from the shared data, not tuned by hand: the trainer
    reproduces them (~30 s: it extracts ~1,500 pages and cross-validates)."""
    from dev.block_selector import candidate_pages, chosen_threshold, cross_validated_f1, training_set
    from dev.boilerplate_classifier import fit
    from tasks.extract import block_selector_weights

    if not (data_dir / "html" / "wcxb" / "metadata.json").exists():
        pytest.skip("WCXB is not staged in the shared data (PROVENANCE.md section 9)")
    wcxb, trafilatura = candidate_pages(data_dir)
    features, labels, weights = training_set(wcxb, trafilatura)
    bias, coefficients = fit(features, labels, sample_weights=weights)
    assert block_selector_weights.FEATURES == FEATURE_NAMES
    assert bias == pytest.approx(block_selector_weights.BIAS, rel=1e-9)
    assert list(coefficients) == pytest.approx(list(block_selector_weights.WEIGHTS), rel=1e-9, abs=1e-12)
    assert chosen_threshold(cross_validated_f1(wcxb, trafilatura), (bias, coefficients), trafilatura) \
        == block_selector_weights.THRESHOLD
