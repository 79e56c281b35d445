"""HTML page -> plain text: one block (paragraph, heading, list item, line) per output line.

The resiliparse engine asks resiliparse for "minimal HTML" (paragraphs, headings, list items and links kept
as tags) rather than plain text, so that it can judge blocks: headings left without a body, short lines
after the article, optionally link-dense blocks or blocks a trained classifier reads as boilerplate. Those are
the boilerplate that resiliparse's main-content heuristics let through most often; each filter is measured in
benchmarks/results/extraction_quality.md.
"""
from __future__ import annotations

import functools
import html as html_entities
import re
from dataclasses import dataclass

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from configs.html import HtmlTextConfig
from tasks.extract.block_features import reads_like_prose
from tasks.extract.block_selector import kept_by_main_content, selected_blocks
from tasks.extract.boilerplate_classifier import without_boilerplate

_TAG = re.compile(r"<(/?)([a-z0-9]+)[^>]*>")
# What each tag of resiliparse's minimal HTML does to the block being read (parse_blocks), by one dict lookup: a link
# opens or closes, the others end the block; of those a list also opens or closes a list, <pre> preformatting, and
# an opening heading or list item starts a block of its kind; <br> keeps the heading level. Other tags: nothing.
_LINK, _BLOCK, _LIST, _PRE, _HEADING, _LIST_ITEM, _BREAK = range(1, 8)
_TAG_KINDS = {"a": _LINK, "p": _BLOCK, "ul": _LIST, "ol": _LIST, "pre": _PRE, "li": _LIST_ITEM, "br": _BREAK,
              **{f"h{level}": _HEADING for level in range(1, 7)}}


def html_to_text(html: str, config: HtmlTextConfig) -> str:
    """The page's text, or "" when there is none or the markup defeats the parser (never raises)."""
    try:
        if config.engine == "trafilatura":
            return _trafilatura_text(html, config)
        return _resiliparse_text(html, config)
    except Exception:  # one unreadable page must cost one document, never the shard
        return ""


def _trafilatura_text(html: str, config: HtmlTextConfig) -> str:
    import trafilatura  # imported lazily: only recipes that select it pay for the import

    text = trafilatura.extract(html, include_comments=config.comments, include_tables=True,
                               favor_precision=config.favor_precision, deduplicate=False)
    return text or ""


def _resiliparse_text(html: str, config: HtmlTextConfig) -> str:
    tree = HTMLTree.parse(html)
    main_content = reads_main_content(tree, config)
    blocks = main_content_blocks(tree, config, main_content)
    if config.block_selector and main_content:  # the selector reads what main content kept: nothing on a whole page
        candidates = selector_candidates(tree, blocks, config)
        if candidates is not None:
            blocks = selected_blocks(*candidates, html)
    if config.max_boilerplate_probability is not None:
        blocks = without_boilerplate(blocks, config.max_boilerplate_probability)
    return _joined(blocks)


def page_blocks(html: str, config: HtmlTextConfig) -> list[Block]:
    """The page's blocks after resiliparse and the rule filters (before the boilerplate classifier, whose
    training reads them): main content, or the whole page when that keeps more than a too-short main content."""
    return main_content_blocks(HTMLTree.parse(html), config)


def reads_main_content(tree: HTMLTree, config: HtmlTextConfig) -> bool:
    """Whether resiliparse's main-content heuristics run on the page (asked for, and the page not too deep)."""
    return config.main_content and not _nests_deeper_than(tree, config.max_main_content_depth)


def main_content_blocks(tree: HTMLTree, config: HtmlTextConfig, main_content: bool | None = None) -> list[Block]:
    """Main content (`main_content`: reads_main_content's answer, when the caller has it), or the whole page when
    that keeps more than a too-short main content."""
    if main_content is None:
        main_content = reads_main_content(tree, config)
    blocks = _render(tree, config, main_content=main_content)
    if main_content and _text_length(blocks) < config.fallback_min_chars:
        whole_page = _render(tree, config, main_content=False)
        if _text_length(whole_page) > _text_length(blocks):
            blocks = whole_page
    return blocks


def selector_candidates(tree: HTMLTree, main_content: list[Block],
                        config: HtmlTextConfig) -> tuple[list[Block], list[bool]] | None:
    """What the block selector chooses from (the whole page's blocks, no line filter) and which of them
    `main_content` (page_blocks's) kept; None when there is nothing to choose from (see kept_by_main_content)."""
    whole_page = _render(tree, config, main_content=False, filtered=False)
    kept = kept_by_main_content(whole_page, main_content) if whole_page else None
    return None if kept is None else (whole_page, kept)


def _joined(blocks: list[Block]) -> str:
    return "\n".join(block.text for block in blocks)


def _text_length(blocks: list[Block]) -> int:
    """len(_joined(blocks)), without building the text."""
    return sum(len(block.text) for block in blocks) + max(0, len(blocks) - 1)


@functools.lru_cache(maxsize=4)
def _depth_selector(depth: int) -> str:
    return "body" + " > *" * depth


def _nests_deeper_than(tree: HTMLTree, depth: int) -> bool:
    """True when some element sits more than `depth` levels below <body> (one CSS query, evaluated natively)."""
    return tree.document.query_selector(_depth_selector(depth)) is not None


def _render(tree: HTMLTree, config: HtmlTextConfig, main_content: bool, filtered: bool = True) -> list[Block]:
    markup = extract_plain_text(
        tree, preserve_formatting="minimal_html", links=True, main_content=main_content,
        comments=config.comments, alt_texts=config.alt_texts, form_fields=config.form_fields,
        noscript=config.noscript, post_meta=config.post_meta, skip_elements=config.skip_elements or None)
    blocks = parse_blocks(markup, config.list_bullets)
    if not filtered:
        return blocks
    if config.max_link_density is not None:
        blocks = [block for block in blocks if block.link_density <= config.max_link_density]
    if config.drop_orphan_headings:
        blocks = _without_orphan_headings(blocks)
    if config.tail_max_words:
        blocks = _without_short_tail(blocks, config.tail_max_words)
    return blocks


@dataclass(slots=True)
class Block:
    """One line of output: its text, how much of it is link text, and whether it is a heading."""

    text: str
    heading_level: int = 0  # 1-6 for <h1>-<h6>, 0 otherwise
    prefix: str = ""  # list bullet
    preformatted: bool = False
    link_chars: int = 0
    body_chars: int = 0  # the text's characters without the bullet and the spaces at either end

    @property
    def link_density(self) -> float:
        return self.link_chars / max(1, self.body_chars)


def parse_blocks(markup: str, list_bullets: bool = True) -> list[Block]:
    """Split resiliparse's minimal-HTML output into non-empty blocks, counting link characters per block.

    The block being read is kept in local variables and becomes a Block only when it has text: a page's markup
    opens and closes several times more blocks than it fills.
    """
    pieces = _TAG.split(markup)  # text, "/" or "", tag name, text, ..., text: no match objects to build
    texts, closing, names = pieces[0::3], pieces[1::3], pieces[2::3]
    real_links = _links_with_text(closing, names)
    blocks: list[Block] = []
    parts: list[str] = []
    heading_level = link_chars = 0
    prefix = ""
    in_link = preformatted = block_preformatted = False
    lists: list[list] = []  # open <ul>/<ol>: [tag, items seen]
    kind_of, unescape, tags = _TAG_KINDS.get, html_entities.unescape, len(names)   # locals: read at every tag

    def finish() -> None:
        joined = "".join(parts)
        body = joined.rstrip() if block_preformatted else joined.strip()  # code keeps its indentation
        if body:
            blocks.append(Block(prefix + body, heading_level, prefix, block_preformatted, link_chars,
                                len(joined.strip())))

    for index, text in enumerate(texts):  # the text before tag `index`, the tag
        if text:
            if "&" in text:
                text = unescape(text)
            for number, line in enumerate(text.split("\n") if "\n" in text else (text,)):
                if number:  # a line break inside a block starts a new block of the same kind
                    if parts:
                        finish()
                        parts, link_chars = [], 0
                    prefix, block_preformatted = "", preformatted
                if parts or block_preformatted or (line and not line.isspace()):  # else stripped off anyway
                    parts.append(line)
                    if in_link:
                        link_chars += len(line.strip())
        if index == tags:
            break
        kind = kind_of(names[index])
        if kind is None:
            continue
        opening = not closing[index]
        if kind == _LINK:
            in_link = opening and index in real_links
            continue
        if kind == _PRE:
            preformatted = opening
        elif kind == _LIST:
            if opening:
                lists.append([names[index], 0])
            elif lists:
                lists.pop()
        if parts:
            finish()
            parts, link_chars = [], 0
        prefix, block_preformatted = "", preformatted
        if kind != _BREAK:
            heading_level = 0
        if opening and kind == _HEADING:
            heading_level = int(names[index][1])
        elif opening and kind == _LIST_ITEM and list_bullets:
            prefix = _bullet(lists)
    finish()
    return blocks


def _links_with_text(closing: list[str], names: list[str]) -> set[int]:
    """Indexes of the <a> tags that have a closing </a> (`closing`: "/" for a closing tag, per tag).

    resiliparse writes no </a> for a link without text, and links never nest, so an <a> followed by
    another <a> before any </a> was empty: the text after it is not link text.
    """
    links = [index for index, name in enumerate(names) if name == "a"]
    return {link for link, following in zip(links, links[1:]) if not closing[link] and closing[following]}


def _bullet(lists: list[list]) -> str:
    if not lists:
        return "• "
    lists[-1][1] += 1
    return f"{lists[-1][1]}. " if lists[-1][0] == "ol" else "• "


def _without_orphan_headings(blocks: list[Block]) -> list[Block]:
    kept = []
    for index, block in enumerate(blocks):
        if block.heading_level:
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            if following is None or 0 < following.heading_level <= block.heading_level:
                continue
        kept.append(block)
    return kept


def _without_short_tail(blocks: list[Block], max_words: int) -> list[Block]:
    """Drop blocks of fewer than `max_words` words after the last block that reads like article prose.

    Preformatted blocks (code) are kept: their lines are short by nature.
    """
    prose = [index for index, block in enumerate(blocks) if reads_like_prose(block)]
    if not prose:
        return blocks
    tail = [block for block in blocks[prose[-1] + 1:] if block.preformatted or len(block.text.split()) >= max_words]
    return blocks[:prose[-1] + 1] + tail
