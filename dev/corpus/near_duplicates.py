"""Near-duplicates of a page at a chosen 5-gram Jaccard similarity of the extracted main text.

Each recipe is an edit with a strength `rate` in [0, 1). The rate that hits the target is searched for: the
similarity of a page with a fraction `rate` of its words edited behaves like s = (1 - rate)^k on the share of
surviving shingles, so every measurement re-estimates k and predicts the next rate (bracketed, with bisection
when the prediction leaves the bracket). Recipes draw the same dice at every rate, so the search sees a
deterministic, nearly monotone function.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from dev.corpus.boilerplate import menu_topics, swap_chrome
from dev.corpus.html_edit import (Paragraph, edit_words, main_paragraphs, paragraph_html, replace_spans,
                                    vocabulary)
from dev.corpus.passages import PassagePool
from dev.corpus.similarity import jaccard, main_text, shingles

TARGETS = (0.9, 0.8, 0.7, 0.5)
RECIPES = ("word_edits", "paragraph_edits", "chrome_swap_and_word_edits")
TOLERANCE = 0.03          # stop searching this close to the target
ACCEPTED_ERROR = 0.05     # give up on the page beyond this
MAX_STEPS = 8
MAX_RATE = 0.95
MIN_PARAGRAPHS = 3


@dataclass(frozen=True)
class NearDuplicate:
    page: str
    recipe: str
    target: float
    measured: float


@dataclass(frozen=True)
class ChromeContext:
    """What a boilerplate swap needs to write believable new site chrome."""
    lang: str | None
    host: str
    year: int


def make_near_duplicate(page: str, original_text: str, target: float, rng: random.Random, pool: PassagePool,
                        chrome: ChromeContext) -> NearDuplicate | None:
    """A variant of `page` whose main text is about `target` similar to `original_text`, or None if the
    page has too little article text to edit that precisely."""
    paragraphs = main_paragraphs(page)
    if len(paragraphs) < MIN_PARAGRAPHS:
        return None
    words = vocabulary(paragraphs)
    original = shingles(original_text)
    chosen = rng.choice(RECIPES)
    dice_seed = rng.getrandbits(64)
    inserted: list[str] = []          # paragraphs drawn so far; a higher rate reuses them and draws more

    def inserted_paragraph(index: int) -> str:
        while len(inserted) <= index:
            inserted.extend(pool.take(40).paragraphs)
        return inserted[index]

    def build(recipe: str, rate: float) -> str:
        dice = random.Random(dice_seed)
        if recipe == "paragraph_edits":
            return _paragraph_edits(page, paragraphs, rate, dice, inserted_paragraph)
        edited = _word_edits(page, paragraphs, rate, dice, words)
        if recipe == "word_edits":
            return edited
        return swap_chrome(edited, chrome.lang, dice, chrome.host, chrome.year, menu_topics(words))

    def similarity(candidate: str) -> float:
        return jaccard(original, shingles(main_text(candidate)))

    # Whole-paragraph edits move similarity in steps too coarse for short articles; word edits then take over.
    for recipe in dict.fromkeys((chosen, "word_edits")):
        found = _search(lambda rate: build(recipe, rate), similarity, target)
        if found:
            return NearDuplicate(found[0], recipe, target, round(found[1], 4))
    return None


def _search(build: Callable[[float], str], similarity: Callable[[str], float],
            target: float) -> tuple[str, float] | None:
    surviving_target = 2 * target / (1 + target)      # share of shingles kept for Jaccard = target
    exponent = 5.0                                   # one edited word breaks about five 5-gram shingles
    low, high = 0.0, MAX_RATE
    best: tuple[str, float] | None = None
    rate = 1 - surviving_target ** (1 / exponent)
    for _ in range(MAX_STEPS):
        candidate = build(rate)
        measured = similarity(candidate)
        if best is None or abs(measured - target) < abs(best[1] - target):
            best = (candidate, measured)
        if abs(measured - target) <= TOLERANCE:
            break
        if measured > target:
            low = rate
        else:
            high = rate
        surviving = 2 * measured / (1 + measured)
        if 0 < surviving < 1 and rate > 0:
            exponent = math.log(surviving) / math.log(1 - rate)
        predicted = 1 - surviving_target ** (1 / exponent) if exponent > 0 else -1.0
        rate = predicted if low < predicted < high else (low + high) / 2
    return best if best and abs(best[1] - target) <= ACCEPTED_ERROR else None


def _word_edits(page: str, paragraphs: tuple[Paragraph, ...], rate: float, dice: random.Random,
                words: list[str]) -> str:
    return replace_spans(page, [(p.start, p.end, f"<p{p.attributes}>{edit_words(p.inner, rate, dice, words)}</p>")
                                for p in paragraphs])


def _paragraph_edits(page: str, paragraphs: tuple[Paragraph, ...], rate: float, dice: random.Random,
                     inserted_paragraph: Callable[[int], str]) -> str:
    """Drop paragraphs and add new ones after others, each paragraph rolling its own dice."""
    replacements, added = [], 0
    for paragraph in paragraphs:
        drop, add = dice.random(), dice.random()
        kept = "" if drop < rate else page[paragraph.start:paragraph.end]
        if add < rate / 2:
            kept += paragraph_html(paragraph.attributes, inserted_paragraph(added))
            added += 1
        replacements.append((paragraph.start, paragraph.end, kept))
    return replace_spans(page, replacements)
