"""What the main-content block selector (tasks/extract/block_selector.py) reads of each block of the whole page:
the block itself (length, links, punctuation, shape), its place among the page's blocks, whether resiliparse's
main-content extraction kept it and how much of its neighbourhood it kept, how often its text repeats on the page
(menus, item lists) and whether the page describes a product (JSON-LD). Character counts come from one array of
the page's code points, the rest from numpy over the blocks: the page has ~175 blocks on average, and this runs on
every page."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from tasks.extract.block_features import CLOSERS, END_MARKS, MARKS, PROSE_MIN_WORDS

SPACE, CAPITAL, DIGIT, MARK, COMMA, CLOSER = 1, 2, 4, 8, 16, 32   # a code point's classes, as bits of _CLASSES


def _code_point_classes() -> np.ndarray:
    """The classes of every code point up to U+3000, the last whitespace of str.split; one entry past it for the
    rest (none): a table that one gather reads for a whole page."""
    classes = np.zeros(0x3002, dtype=np.uint8)
    for code in range(0x3001):
        character = chr(code)
        classes[code] = (SPACE * character.isspace() + DIGIT * ("0" <= character <= "9") + COMMA * (character == ",")
                         + MARK * (character in MARKS) + CLOSER * (character in CLOSERS)
                         + CAPITAL * ("A" <= character <= "Z" or "À" <= character <= "Þ" and character != "×"))
    return classes


_CLASSES = _code_point_classes()
_PRODUCT_JSON_LD = re.compile(r'"@type"\s*:\s*"Product"')
_END_MARK_CODES = np.array([ord(mark) for mark in END_MARKS], dtype=np.uint32)   # some lie past _CLASSES
_YEAR_DIGITS = re.compile(r"(?:19|20)\d\d")    # block_features.YEAR without its \b, tested after (_at_word_edges)
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
    own = _own_features(blocks, texts)
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
    # the literal first: `in` scans a page in half the pattern's time, and 92% of WCXB's pages have no "Product"
    product_page = float('"Product"' in html and bool(_PRODUCT_JSON_LD.search(html)))
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
    return _stacked(columns, count)


def _own_features(blocks: Sequence, texts: list[str]) -> np.ndarray:
    """The columns of FEATURE_NAMES from log_chars (here: chars) to reads_like_prose, one row per block."""
    count, joined = len(texts), "\n".join(texts)
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    block_of = np.cumsum(codes == ord("\n"))     # block texts hold no line break: it separates them
    classes = _CLASSES[np.minimum(codes, len(_CLASSES) - 1)]
    space = (classes & SPACE).astype(bool)
    word_start = ~space & np.concatenate([[True], space[:-1]])

    def per_block(flags: np.ndarray) -> np.ndarray:
        return np.bincount(block_of[flags], minlength=count).astype(np.float64)

    def of_class(bit: int) -> np.ndarray:
        return per_block((classes & bit).astype(bool))

    lengths = np.array([len(text) for text in texts], dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(lengths[:-1] + 1)]).astype(np.intp)     # of each text in `joined`
    chars, words = np.maximum(1.0, lengths), per_block(word_start)
    word_count = np.maximum(1.0, words)
    heading = np.array([block.heading_level > 0 for block in blocks], dtype=np.float64)
    sentence_ends = _ends_sentence(codes, classes, starts, lengths.astype(np.intp))
    return _stacked([
        lengths, np.array([block.link_chars for block in blocks]) / chars, heading, sentence_ends,
        np.array([bool(block.prefix) for block in blocks], dtype=np.float64),
        of_class(DIGIT) / chars, per_block(word_start & (classes & CAPITAL).astype(bool)) / word_count,
        (chars + 1 - word_count) / word_count, of_class(MARK) / chars,  # spaces not counted
        _has_year(starts, joined), of_class(COMMA) / word_count,
        sentence_ends * (1 - heading) * (words >= PROSE_MIN_WORDS),  # block_features.reads_like_prose
    ], count)


def _stacked(columns: list, count: int) -> np.ndarray:
    """The columns side by side, one row per block (np.column_stack without its per-column checks)."""
    stacked = np.empty((count, len(columns)))
    for index, column in enumerate(columns):
        stacked[:, index] = column
    return stacked


def _ends_sentence(codes: np.ndarray, classes: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """1.0 for the blocks whose text ends a sentence (block_features.ends_sentence of its last _SENTENCE_END_REACH
    characters: an end mark, then only closing quotes or brackets), for all blocks at once: the last character that
    is not a closer, at or before each text's end, must lie in that reach and be an end mark."""
    if not len(codes):
        return np.zeros(len(starts))
    last_other = np.maximum.accumulate(np.where(classes & CLOSER, -1, np.arange(len(codes))))
    ends = starts + lengths - 1
    found = last_other[np.maximum(ends, 0)]
    within = (lengths > 0) & (found >= np.maximum(starts, ends + 1 - _SENTENCE_END_REACH))
    return (within & np.isin(codes[np.where(within, found, 0)], _END_MARK_CODES)).astype(np.float64)


def _has_year(starts: np.ndarray, joined: str) -> np.ndarray:
    """1.0 for the blocks whose text holds a year of 1900-2099, from one search of `joined` (texts, line by line;
    `starts`: where each begins)."""
    flags = np.zeros(len(starts))
    found = [match.start() for match in _YEAR_DIGITS.finditer(joined) if _at_word_edges(joined, *match.span())]
    flags[np.searchsorted(starts, found, side="right") - 1] = 1.0
    return flags


def _at_word_edges(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] has no word character (re's \\w: alphanumeric or _) right before or after it: YEAR's
    \\b on either side. Every YEAR match is a _YEAR_DIGITS match that passes this (a match of four digits cannot
    overlap one that starts a word), and testing after the search is ~4x faster than \\b in the pattern."""
    before, after = text[start - 1:start], text[end:end + 1]
    return not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_")


def _shifted(values: np.ndarray, by: int, fill: float) -> np.ndarray:
    """values[i - by] at i (the previous block's for by=1, the next one's for by=-1), `fill` past the ends."""
    shifted = np.full(len(values), fill)
    if by > 0:
        shifted[by:] = values[:-by]
    else:
        shifted[:by] = values[-by:]
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
