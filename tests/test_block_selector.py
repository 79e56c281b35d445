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


def test_the_selector_is_on_by_default_and_chooses_from_the_whole_page():
    article = " ".join(["This sentence belongs to the article and reads like prose."] * 3)
    page = (f"<html><body><nav><a href='/'>Home</a></nav><main><h1>Title</h1><p>{article}</p>"
            f"<p>{article}</p></main></body></html>")
    assert HtmlTextConfig().block_selector
    selected = html_to_text(page, HtmlTextConfig())
    assert article in selected and "Home" not in selected


def test_the_numpy_trees_give_lightgbms_probabilities():
    """Trees of different depths (leaves above the deepest level), values on a threshold (which go left) and a tree
    of one leaf (LightGBM writes one when nothing splits) included."""
    import lightgbm

    from dev.block_selector import trees_of
    from tasks.extract.block_selector import forest, log_odds, probabilities

    rng = np.random.default_rng(0)
    rows = np.round(rng.normal(size=(3000, 4)), 1)          # few distinct values: many rows on a threshold
    labels = (rows[:, 0] + rows[:, 1] * rows[:, 2] + rng.normal(scale=0.3, size=len(rows)) > 0).astype(float)
    parameters = {"objective": "binary", "num_leaves": 7, "max_depth": 4, "min_gain_to_split": 5.0,
                  "deterministic": True, "num_threads": 1, "force_row_wise": True, "verbose": -1}
    booster = lightgbm.train(parameters, lightgbm.Dataset(rows, labels), num_boost_round=40)
    trees = trees_of(booster)
    assert len({len(tree[4]) for tree in trees}) > 1
    assert np.abs(probabilities(forest(trees), rows) - booster.predict(rows)).max() <= 1e-12
    assert log_odds(forest([*trees, ((), (), (), (), (0.25,))]), rows) \
        == pytest.approx(booster.predict(rows, raw_score=True) + 0.25, abs=1e-12)


def test_retraining_gives_the_committed_selector(data_dir):
    """The trees and the threshold are generated from the shared data, not tuned by hand: the trainer reproduces
    the weights file byte for byte (~45 s: it extracts ~1,500 pages, fits LightGBM six times and
    cross-validates)."""
    from dev.block_selector import WEIGHTS_MODULE, candidate_pages, module_source, trained

    if not (data_dir / "html" / "wcxb" / "metadata.json").exists():
        pytest.skip("WCXB is not staged in the shared data (PROVENANCE.md section 9)")
    assert module_source(*trained(*candidate_pages(data_dir))) == WEIGHTS_MODULE.read_text()
