"""Recipe model for the HTML-to-text step.

The defaults are the configuration chosen in benchmarks/results/extraction_quality.md; change them only
together with a new benchmark run.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from configs.base import StrictModel

# Page regions that are navigation or site furniture by their HTML5 semantics or ARIA role.
DEFAULT_SKIP_ELEMENTS: tuple[str, ...] = (
    "nav",
    "footer",
    "aside",
    "figcaption",
    "[role=navigation]",
    "[role=contentinfo]",
    "[role=complementary]",
)


class HtmlTextConfig(StrictModel):
    """How one HTML page becomes plain text (one block per line)."""

    engine: Literal["resiliparse", "trafilatura"] = "resiliparse"

    comments: bool = False  # keep user-comment sections (both engines)

    # --- resiliparse engine: passed to resiliparse.extract.html2text.extract_plain_text ---
    main_content: bool = True  # resiliparse's main-content heuristics (drops menus, sidebars, ...)
    alt_texts: bool = False  # keep <img alt> texts
    form_fields: bool = False
    noscript: bool = False
    post_meta: bool = True  # keep blog-post meta data (date, author line) inside the main content
    list_bullets: bool = True  # prefix list items with "• " / "1. "
    skip_elements: list[str] = Field(default_factory=lambda: list(DEFAULT_SKIP_ELEMENTS))

    # --- resiliparse engine: post-filters on the extracted blocks ---
    max_link_density: float | None = Field(default=None, ge=0.0, le=1.0)
    """Drop a block (paragraph, list item, heading, line) when more than this share of its characters
    is link text: menus, tag lists, "related articles" teasers. None keeps every block."""
    drop_orphan_headings: bool = True
    """Drop a heading that is followed by nothing or directly by a heading of the same or higher rank:
    the title of a widget whose body was removed ("Mehr zum Thema", "Related posts")."""
    tail_max_words: int = Field(default=10, ge=0)
    """After the last block that reads like prose (>= 8 words, ending a sentence), drop lines of fewer than
    this many words: widget titles, share prompts, copyright lines after the article. Code is kept. 0 disables."""
    fallback_min_chars: int = Field(default=600, ge=0)
    """When main-content extraction keeps fewer characters than this, extract the whole page instead
    (main-content heuristics sometimes discard the article of short or unusual pages). 0 disables."""

    max_boilerplate_probability: float | None = Field(default=None, gt=0.0, lt=1.0)
    """Drop a block that the trained boilerplate classifier (tasks/extract/boilerplate_classifier.py, a logistic
    regression over each block's length, links, punctuation and place on the page) gives a higher probability
    of being boilerplate than this. None: no classifier. Measured at 0.9 and 0.95 in
    benchmarks/results/extraction_quality.md; off by default: on the model it made the held-out bits per byte worse
    (benchmarks/results/curation_quality.json, part 1)."""

    block_selector: bool = True
    """Choose the main content block by block from the whole page with the trained selector
    (tasks/extract/block_selector.py: a small gradient-boosted tree ensemble over each block's text, place, and
    whether resiliparse's main content and the blocks around it were kept). False: resiliparse's main content as
    it is, with the rule filters (faster; lower word F1 on every WCXB page type and more leak, docs/stages.md)."""

    max_main_content_depth: int = Field(default=256, ge=1)
    """Pages whose elements nest deeper than this below <body> are extracted as whole pages: resiliparse's
    main-content heuristics are quadratic in the depth (5,000 levels take ~0.7 s, 20,000 levels ~34 s), so one
    hostile page could stall a worker. Checking costs ~0.2 ms per page."""

    # --- trafilatura engine ---
    favor_precision: bool = False  # trafilatura's precision mode (less boilerplate, less text)

    @field_validator("skip_elements")
    @classmethod
    def _selectors_parse(cls, selectors: list[str]) -> list[str]:
        # Fail at recipe load, not in the middle of a shard, when a selector is not valid CSS.
        from resiliparse.extract.html2text import extract_plain_text

        for selector in selectors:
            try:
                extract_plain_text("<p></p>", skip_elements=[selector])
            except Exception as error:  # resiliparse raises CSSParserException
                raise ValueError(f"invalid CSS selector {selector!r}: {error}") from None
        return selectors
