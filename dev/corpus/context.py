"""What every capture builder shares: the seeded RNG, fresh text, the URL registry and page templates."""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from dev.corpus.html_edit import Paragraph, main_paragraphs
from dev.corpus.http_message import ServerProfile, server_profile
from dev.corpus.passages import PassagePool
from dev.corpus.similarity import main_text, shared, shingles
from dev.corpus.sources import SourcePage
from dev.corpus.urls import UrlRegistry, host_of

MIN_TEMPLATE_PARAGRAPHS = 3
MIN_ARTICLE_RECALL = 0.7      # share of the paragraphs' shingles that the extractor keeps
MIN_ARTICLE_SHARE = 0.75      # share of the extracted text that comes from the paragraphs
SLOT_PROBE_CHARS = 60


def decoded(page: SourcePage) -> str | None:
    """The page as text if it is UTF-8 (the pages edited into new ones; legacy-charset pages are only copied)."""
    try:
        return page.html_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass
class Template:
    """A real page whose article can be replaced: its site chrome is reused for new pages on the same host."""
    source: SourcePage
    html: str
    _text: str | None = field(default=None, repr=False)
    _slots: tuple[Paragraph, ...] | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        return host_of(self.source.url)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = main_text(self.html)
        return self._text

    @property
    def article_slots(self) -> tuple[Paragraph, ...]:
        """The <p> paragraphs whose text the extractor keeps: the article, not teasers or sidebars."""
        if self._slots is None:
            kept = " ".join(self.text.split())
            self._slots = tuple(p for p in main_paragraphs(self.html)
                                if " ".join(p.text.split())[:SLOT_PROBE_CHARS] in kept)
        return self._slots


class TemplateSupply:
    """Source pages in seeded order, checked lazily, then handed out round-robin so sites are reused evenly.

    A usable template is one whose <p> paragraphs are the article the extractor finds: most of them are in its
    main text and they make up most of it. Replacing them then really replaces the article, so that a new
    article in the template is neither lost to the extractor nor a near-duplicate of the old page.
    """

    def __init__(self, pages: Sequence[SourcePage], rng: random.Random):
        order = list(pages)
        rng.shuffle(order)
        self._unchecked = iter(order)
        self._usable: list[Template] = []
        self._turn = 0

    def next(self) -> Template:
        for page in self._unchecked:
            html = decoded(page)
            template = Template(page, html) if html is not None else None
            if template and _article_is_paragraphs(template):
                self._usable.append(template)
                return template
        template = self._usable[self._turn % len(self._usable)]
        self._turn += 1
        return template


class HostProfiles:
    """Each host's address and server software, fixed by the seed and the host name alone."""

    def __init__(self, seed: int):
        self._seed = seed
        self._profiles: dict[str, ServerProfile] = {}

    def of(self, host: str) -> ServerProfile:
        if host not in self._profiles:
            self._profiles[host] = server_profile(random.Random(f"{self._seed}:host:{host}"))
        return self._profiles[host]


def _article_is_paragraphs(template: Template) -> bool:
    if len(main_paragraphs(template.html)) < MIN_TEMPLATE_PARAGRAPHS:     # cheap test before extracting
        return False
    paragraphs = template.article_slots
    if len(paragraphs) < MIN_TEMPLATE_PARAGRAPHS:
        return False
    article = shingles(" ".join(p.text for p in paragraphs))
    text = shingles(template.text)
    found = shared(article, text)
    return found >= MIN_ARTICLE_RECALL * article.size and found >= MIN_ARTICLE_SHARE * text.size


@dataclass
class BuildContext:
    rng: random.Random
    pool: PassagePool
    urls: UrlRegistry
    templates: TemplateSupply
    profiles: HostProfiles
    crawl_year: int
