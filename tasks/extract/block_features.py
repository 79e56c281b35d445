"""What a boilerplate-block classifier reads of one block of a page (tasks/extract/html_text.Block): its own
length, links, punctuation and shape, and its place among the page's blocks (neighbours, distance to the nearest
block that reads like article prose). Lengths are in characters, not words, so that text without spaces (Chinese,
Japanese) is not read as a run of one-word lines."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

PROSE_MIN_WORDS = 8              # a block of at least this many words ending a sentence reads like article prose
END_MARKS, CLOSERS = frozenset(".!?…。！？"), "\"'»«“”’)]"     # a sentence's end, and what may close it
YEAR = re.compile(r"\b(?:19|20)\d\d\b")
MARKS = "|©@#:/"                  # separators of menus, bylines, credits and URLs

FEATURE_NAMES = (
    "log_chars", "link_density", "is_heading", "ends_sentence", "is_list_item", "position", "digit_share",
    "capitalised_word_share", "mean_word_chars", "log_chars_before", "log_chars_after", "log_blocks_to_prose",
    "before_first_prose", "after_last_prose", "share_of_page_chars", "mark_share", "has_year", "commas_per_word",
    "link_density_before", "link_density_after",
)


def ends_sentence(text: str) -> bool:
    r"""Whether `text` ends in a sentence's end mark, closing quotes or brackets allowed after it: what the regex
    r"[.!?…。！？][\"'»«“”’)\]]*$" finds in a block's text (which holds no line break, before which `$` would also
    match), without its search (~2 us a block, on every block of every page)."""
    body = text.rstrip(CLOSERS)
    return bool(body) and body[-1] in END_MARKS


def reads_like_prose(block) -> bool:
    return (not block.heading_level and len(block.text.split()) >= PROSE_MIN_WORDS
            and ends_sentence(block.text))


def block_features(blocks: Sequence) -> list[tuple[float, ...]]:
    """One row of FEATURE_NAMES per block, in order (linear in the blocks: pages of thousands of lines exist)."""
    count = len(blocks)
    texts = [block.text for block in blocks]
    prose = [reads_like_prose(block) for block in blocks]
    to_prose = _blocks_to_nearest(prose)
    first, last = (prose.index(True), count - 1 - prose[::-1].index(True)) if True in prose else (0, count - 1)
    page_chars = max(1, sum(map(len, texts)))
    rows = []
    for index, (block, text) in enumerate(zip(blocks, texts)):
        words = text.split()
        chars, word_count = max(1, len(text)), max(1, len(words))
        before = blocks[index - 1] if index else None
        after = blocks[index + 1] if index + 1 < count else None
        rows.append((
            math.log1p(len(text)), block.link_density, float(block.heading_level > 0),
            float(ends_sentence(text)), float(bool(block.prefix)), index / max(1, count - 1),
            sum(map(str.isdigit, text)) / chars,
            sum(1 for word in words if word[0].isupper()) / word_count,
            sum(map(len, words)) / word_count,
            math.log1p(len(before.text)) if before else 0.0, math.log1p(len(after.text)) if after else 0.0,
            math.log1p(to_prose[index]), float(index < first), float(index > last), len(text) / page_chars,
            sum(text.count(mark) for mark in MARKS) / chars, float(bool(YEAR.search(text))),
            text.count(",") / word_count,
            before.link_density if before else 1.0, after.link_density if after else 1.0,
        ))
    return rows


def _blocks_to_nearest(flags: list[bool]) -> list[int]:
    """Per position, how many positions away the nearest True is (len(flags) when there is none)."""
    count = len(flags)
    distances = [count] * count
    nearest = None
    for index in range(count):                      # from the left
        nearest = index if flags[index] else nearest
        if nearest is not None:
            distances[index] = index - nearest
    nearest = None
    for index in reversed(range(count)):            # and from the right
        nearest = index if flags[index] else nearest
        if nearest is not None:
            distances[index] = min(distances[index], nearest - index)
    return distances
