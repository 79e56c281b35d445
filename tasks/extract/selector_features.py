"""What the main-content block selector (tasks/extract/block_selector.py) reads of each block of the whole page:
the block itself (length, links, punctuation, shape), its place among the page's blocks, whether resiliparse's
main-content extraction kept it and how much of its neighbourhood it kept, how often its text repeats on the page
(menus, item lists) and whether the page describes a product (JSON-LD). One pass of Python over the blocks for
what only the text gives, numpy for the rest: the page has ~175 blocks on average, and this runs on every page."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from tasks.extract.block_features import PROSE_MIN_WORDS, SENTENCE_END

_MARKS = "|©@#:/"                            # separators of menus, bylines, credits and URLs
_CAPITALISED = re.compile(r"(?:^|\s)[A-ZÀ-ÖØ-Þ]")  # a word starting with a Latin capital
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_PRODUCT_JSON_LD = re.compile(r'"@type"\s*:\s*"Product"')
_SENTENCE_END_REACH = 8                     # a sentence's end mark and the quotes or brackets after it
NEARBY = 3                                   # blocks on each side whose share kept by main content is a feature

FEATURE_NAMES = (
    "log_chars", "link_density", "is_heading", "ends_sentence", "is_list_item", "digit_share",
    "capitalised_word_share", "mean_word_chars", "mark_share", "has_year", "commas_per_word", "reads_like_prose",
    "position", "log_chars_before", "log_chars_after", "link_density_before", "link_density_after",
    "share_of_page_chars", "log_repeats", "kept", "before_kept_span", "after_kept_span", "kept_share_nearby",
    "kept_share_of_page_chars", "log_kept_chars", "product_page", "kept_on_product_page", "log_blocks_to_kept",
    # main content's choice weighs differently by the block's kind: a linear model needs the products spelt out
    "kept_x_log_chars", "kept_x_link_density", "kept_x_is_list_item", "kept_x_reads_like_prose",
    "not_kept_x_kept_share_nearby",
)


def selector_features(blocks: Sequence, kept: Sequence[bool], html: str) -> np.ndarray:
    """One row of FEATURE_NAMES per block of the whole page; `kept`: whether main content kept the block."""
    texts = [block.text for block in blocks]
    own = np.array([_own_features(block, text) for block, text in zip(blocks, texts)], dtype=np.float64)
    chars, link_density, is_list_item, prose = own[:, 0], own[:, 1], own[:, 4], own[:, 11]
    count = len(blocks)
    kept_flags = np.asarray(kept, dtype=np.float64)
    log_chars = np.log1p(chars)
    page_chars = max(1.0, chars.sum())
    kept_chars = float((chars * kept_flags).sum())
    repeats = Counter(texts)
    kept_at = np.flatnonzero(kept_flags)
    first_kept, last_kept = (kept_at[0], kept_at[-1]) if len(kept_at) else (count, -1)
    index = np.arange(count)
    kept_nearby = _share_nearby(kept_flags, NEARBY)
    product_page = float(bool(_PRODUCT_JSON_LD.search(html)))
    columns = [
        log_chars, *own[:, 1:].T,
        index / max(1, count - 1), _shifted(log_chars, 1, 0.0), _shifted(log_chars, -1, 0.0),
        _shifted(link_density, 1, 1.0), _shifted(link_density, -1, 1.0), chars / page_chars,
        np.log([repeats[text] for text in texts]), kept_flags,
        (index < first_kept).astype(np.float64), (index > last_kept).astype(np.float64),
        kept_nearby, np.full(count, kept_chars / page_chars), np.full(count, np.log1p(kept_chars)),
        np.full(count, product_page), product_page * kept_flags, np.log1p(_distance_to_nearest(kept_flags)),
        kept_flags * log_chars, kept_flags * link_density, kept_flags * is_list_item, kept_flags * prose,
        (1 - kept_flags) * kept_nearby,
    ]
    return np.column_stack(columns)


def _own_features(block, text: str) -> tuple[float, ...]:
    words = text.split()
    chars, word_count = max(1, len(text)), max(1, len(words))
    heading = block.heading_level > 0
    ends_sentence = SENTENCE_END.search(text[-_SENTENCE_END_REACH:]) is not None
    return (len(text), block.link_chars / chars, float(heading), float(ends_sentence), float(bool(block.prefix)),
            sum(map(text.count, "0123456789")) / chars, len(_CAPITALISED.findall(text)) / word_count,
            (chars + 1 - word_count) / word_count, sum(map(text.count, _MARKS)) / chars,  # spaces not counted
            float(_YEAR.search(text) is not None), text.count(",") / word_count,
            float(ends_sentence and not heading and len(words) >= PROSE_MIN_WORDS))  # block_features.reads_like_prose


def _shifted(values: np.ndarray, by: int, fill: float) -> np.ndarray:
    """values[i - by] at i (the previous block's for by=1, the next one's for by=-1), `fill` past the ends."""
    shifted = np.roll(values, by)
    if by > 0:
        shifted[:by] = fill
    else:
        shifted[by:] = fill
    return shifted


def _distance_to_nearest(flags: np.ndarray) -> np.ndarray:
    """Per block, how many blocks away the nearest flagged one is (the block count when none is)."""
    count = len(flags)
    flagged = np.flatnonzero(flags)
    if not len(flagged):
        return np.full(count, float(count))
    index = np.arange(count)
    after = np.searchsorted(flagged, index)
    next_distance = np.where(after < len(flagged), flagged[np.minimum(after, len(flagged) - 1)] - index, count)
    previous_distance = np.where(after > 0, index - flagged[np.maximum(after - 1, 0)], count)
    return np.minimum(next_distance, previous_distance).astype(np.float64)


def _share_nearby(flags: np.ndarray, reach: int) -> np.ndarray:
    """Per block, the mean of `flags` over the up to `reach` blocks on each side of it (itself excluded)."""
    count = len(flags)
    sums = np.concatenate([[0.0], np.cumsum(flags)])
    index = np.arange(count)
    low, high = np.maximum(0, index - reach), np.minimum(count, index + reach + 1)
    return (sums[high] - sums[low] - flags) / np.maximum(1, high - low - 1)
