"""Edits to real HTML that leave its structure intact: find the article's paragraphs, change their words,
drop or add paragraphs, swap the title, put other text into the page.

Pages are edited as text with regular expressions rather than re-serialised through a DOM, so everything
outside the edited spans stays byte-identical to the crawled page.
"""
from __future__ import annotations

import html
import random
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

PARAGRAPH = re.compile(r"<p\b([^>]*)>(.*?)</p\s*>", re.IGNORECASE | re.DOTALL)
NESTED_BLOCK = re.compile(
    r"<(?:p|div|section|article|table|ul|ol|li|h[1-6]|form|blockquote|figure|header|footer|nav|aside)\b",
    re.IGNORECASE)
# Where a <p> is not article prose: inside raw text (a script's string), or inside an element that by HTML5
# semantics is not the article (a figure's caption, a sidebar, navigation, a page header or footer).
NOT_PROSE_ELEMENT = re.compile(r"<(script|style|noscript|template|textarea|figure|figcaption|aside|nav|header|footer)\b"
                               r".*?</\1\s*>", re.IGNORECASE | re.DOTALL)
TITLE = re.compile(r"(<title\b[^>]*>)(.*?)(</title\s*>)", re.IGNORECASE | re.DOTALL)
HEADING = re.compile(r"(<h1\b[^>]*>)(.*?)(</h1\s*>)", re.IGNORECASE | re.DOTALL)
TAG_OR_TEXT = re.compile(r"(<[^>]*>)")
TAG = re.compile(r"<[^>]*>")
WORD = re.compile(r"\S+")
BODY_CLOSE = re.compile(r"</body\s*>", re.IGNORECASE)
MIN_PARAGRAPH_CHARS = 40
CONTAINER_OPEN = re.compile(r"<(div|section|article|ul|ol|table|figure|blockquote|aside|span|a)\b", re.IGNORECASE)
CONTAINER_CLOSE = re.compile(r"</(div|section|article|ul|ol|table|figure|blockquote|aside|span|a)\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Paragraph:
    start: int          # span of the whole <p> element in the page
    end: int
    attributes: str     # the <p> tag's attributes, reused for paragraphs put in its place
    inner: str

    @property
    def text(self) -> str:
        return html.unescape(TAG.sub(" ", self.inner)).strip()


@lru_cache(maxsize=32)     # builders look at the same template or original several times in a row
def main_paragraphs(page: str) -> tuple[Paragraph, ...]:
    """<p> elements that hold prose: plain inline content, at least a sentence long, not inside a script nor in a
    caption, sidebar, menu, header or footer (an article written there is lost to an extractor that keeps only
    the main content)."""
    excluded = [m.span() for m in NOT_PROSE_ELEMENT.finditer(page)]
    excluded_starts = [start for start, _ in excluded]
    paragraphs = []
    for match in PARAGRAPH.finditer(page):
        enclosing = bisect_right(excluded_starts, match.start()) - 1
        if enclosing >= 0 and excluded[enclosing][1] > match.start():
            continue
        paragraph = Paragraph(match.start(), match.end(), match.group(1), match.group(2))
        if not NESTED_BLOCK.search(paragraph.inner) and len(paragraph.text) >= MIN_PARAGRAPH_CHARS:
            paragraphs.append(paragraph)
    return tuple(paragraphs)


def replace_spans(page: str, replacements: list[tuple[int, int, str]]) -> str:
    """Apply (start, end, new_text) replacements given in page order and not overlapping."""
    pieces, cursor = [], 0
    for start, end, new_text in replacements:
        pieces += [page[cursor:start], new_text]
        cursor = end
    pieces.append(page[cursor:])
    return "".join(pieces)


def paragraph_html(attributes: str, text: str) -> str:
    return f"<p{attributes}>{html.escape(text, quote=False)}</p>"


def set_title(page: str, title: str) -> str:
    """Replace the <title> and the first <h1> (if it is plain text), as a new article on the same site would."""
    escaped = html.escape(title, quote=False)
    page = TITLE.sub(lambda m: m.group(1) + escaped + m.group(3), page, count=1)
    heading = HEADING.search(page)
    if heading and not NESTED_BLOCK.search(heading.group(2)):
        page = page[:heading.start(2)] + escaped + page[heading.end(2):]
    return page


def replace_article(page: str, slots: Sequence[Paragraph], new_html: str) -> str:
    """Put `new_html` where the article was. When the stretch from the first to the last article paragraph is
    balanced markup, all of it goes (with the headings, lists and captions in between); otherwise only the
    paragraphs go, the new content taking the first one's place."""
    first, last = slots[0], slots[-1]
    stretch = page[first.start:last.end]
    if Counter(m.lower() for m in CONTAINER_OPEN.findall(stretch)) == \
            Counter(m.lower() for m in CONTAINER_CLOSE.findall(stretch)):
        return page[:first.start] + new_html + page[last.end:]
    return replace_spans(page, [(p.start, p.end, new_html if p is first else "") for p in slots])


def transplant(page: str, slots: Sequence[Paragraph], paragraphs: list[str], title: str) -> str:
    """The page with its article replaced by `paragraphs` under a new title."""
    article = "\n".join(paragraph_html(slots[0].attributes, text) for text in paragraphs)
    return set_title(replace_article(page, slots, article), title)


def append_to_body(page: str, fragment: str) -> str:
    close = BODY_CLOSE.search(page)
    position = close.start() if close else len(page)
    return page[:position] + fragment + page[position:]


def edit_words(inner: str, rate: float, rng: random.Random, vocabulary: list[str]) -> str:
    """Substitute, delete or insert words in a paragraph's text (never inside its tags or entities).

    Every word draws its dice whatever the rate, so for one RNG state a higher rate edits a superset of the
    words a lower rate edits; that keeps similarity monotone in the rate for the search in near_duplicates.
    """
    pieces = TAG_OR_TEXT.split(inner)
    for index in range(0, len(pieces), 2):    # even pieces are text, odd ones tags
        pieces[index] = WORD.sub(lambda m: _edit_word(m.group(0), rate, rng, vocabulary), pieces[index])
    return "".join(pieces)


def _edit_word(word: str, rate: float, rng: random.Random, vocabulary: list[str]) -> str:
    roll, choice = rng.random(), rng.random()     # `choice` picks both the operation and the other word
    if roll >= rate or "&" in word:
        return word
    operation, position = divmod(choice * 4, 1)
    other = html.escape(vocabulary[int(position * len(vocabulary))], quote=False)
    return (other, "", f"{word} {other}", f"{other} {word}")[int(operation)]


def vocabulary(paragraphs: Sequence[Paragraph]) -> list[str]:
    """The words of the paragraphs' text, in order and with repeats (so frequent words are drawn more often)."""
    return [word for paragraph in paragraphs for word in paragraph.text.split()]
