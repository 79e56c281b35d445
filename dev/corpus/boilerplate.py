"""Site chrome (menus, footers, notices) and pages that are mostly chrome: the text an extractor must drop."""
from __future__ import annotations

import html
import random
import re
from collections.abc import Sequence

from dev.corpus.html_edit import Paragraph, append_to_body, replace_article
from dev.corpus.urls import slug

SECTIONS = {
    "en": ("News", "Politics", "Business", "Tech", "Science", "Health", "Sports", "Culture", "Travel", "Food",
           "Opinion", "Video", "Podcasts", "Weather", "Local", "World", "Events", "Jobs", "Shop", "Contact"),
    "de": ("Nachrichten", "Politik", "Wirtschaft", "Digital", "Wissen", "Gesundheit", "Sport", "Kultur",
           "Reisen", "Genuss", "Meinung", "Video", "Podcasts", "Wetter", "Lokales", "Welt", "Termine", "Jobs",
           "Shop", "Kontakt"),
}
LEGAL_LINKS = {
    "en": ("Privacy Policy", "Terms of Use", "Cookie Settings", "Accessibility", "Advertise", "Careers",
           "Newsletter", "About us", "Sitemap", "Help"),
    "de": ("Datenschutz", "Impressum", "Cookie-Einstellungen", "AGB", "Barrierefreiheit", "Werbung",
           "Karriere", "Newsletter", "Über uns", "Sitemap"),
}
NOTICES = {
    "en": ("We use cookies to improve your experience. By continuing to browse you agree to our use of cookies.",
           "Sign up for our newsletter and get the best stories delivered to your inbox every morning.",
           "Follow us on Facebook, Twitter and Instagram for the latest updates.",
           "All rights reserved. Reproduction without written permission is prohibited.",
           "Advertisement"),
    "de": ("Wir verwenden Cookies, um Ihnen ein besseres Nutzererlebnis zu bieten. Mit der weiteren Nutzung "
           "stimmen Sie der Verwendung von Cookies zu.",
           "Melden Sie sich für unseren Newsletter an und erhalten Sie jeden Morgen die wichtigsten Nachrichten.",
           "Folgen Sie uns auf Facebook, Twitter und Instagram.",
           "Alle Rechte vorbehalten. Vervielfältigung nur mit schriftlicher Genehmigung.",
           "Anzeige"),
}
MAX_TOPICS = 60
SITE_CHROME = re.compile(r"<(nav|footer)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
BODY_OPEN = re.compile(r"<body\b[^>]*>", re.IGNORECASE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def menu_topics(words: list[str]) -> list[str]:
    """Capitalised words of an article, as entries for its site's menus."""
    return sorted({w.strip(".,:;!?\"'()") for w in words if w[:1].isupper() and len(w) > 4})[:MAX_TOPICS]


def chrome_language(lang: str | None) -> str:
    return lang if lang in SECTIONS else "en"


def navigation(lang: str, rng: random.Random, links: int, topics: list[str]) -> str:
    """A mega-menu: sections, each with sub-pages named after topics of the site."""
    sections = SECTIONS[lang]
    items = []
    for _ in range(links):
        section = rng.choice(sections)
        topic = rng.choice(topics) if topics else section
        href = f"/{section.lower()}/{slug(topic)}-{rng.randint(1, 999)}/"
        items.append(f'<li><a href="{href}">{html.escape(section)}: {html.escape(topic)}</a></li>')
    return '<nav class="site-menu"><ul>' + "".join(items) + "</ul></nav>"


def footer(lang: str, rng: random.Random, host: str, year: int) -> str:
    notices = "".join(f"<p>{html.escape(n)}</p>" for n in rng.sample(NOTICES[lang], 3))
    legal = "".join(f'<a href="/{slug(text)}/">{html.escape(text)}</a> | '
                    for text in rng.sample(LEGAL_LINKS[lang], 6))
    return f'<footer class="site-footer">{notices}<p>{legal}</p><p>© {year} {html.escape(host)}</p></footer>'


def swap_chrome(page: str, lang: str | None, rng: random.Random, host: str, year: int, topics: list[str]) -> str:
    """The page with its <nav> and <footer> replaced by different ones (a redesign, another mirror)."""
    language = chrome_language(lang)
    stripped = SITE_CHROME.sub("", page)
    return append_to_body(stripped, navigation(language, rng, rng.randint(15, 40), topics)
                          + footer(language, rng, host, year))


def chrome_dominated(page: str, article: Sequence[Paragraph], lang: str | None, rng: random.Random, host: str,
                     year: int, topics: list[str]) -> str:
    """The article cut to its first sentence, drowned in a huge menu and footer."""
    language = chrome_language(lang)
    first_sentence = SENTENCE_END.split(article[0].text, maxsplit=1)[0]
    page = replace_article(page, article, f"<p>{html.escape(first_sentence)}</p>")
    menu = navigation(language, rng, rng.randint(150, 300), topics)
    body = BODY_OPEN.search(page)
    page = page[:body.end()] + menu + page[body.end():] if body else menu + page
    return append_to_body(page, footer(language, rng, host, year))


def listing_page(page: str, article: Sequence[Paragraph], teasers: list[str], rng: random.Random) -> str:
    """A category page: the article replaced by a list of teaser headlines, each a link and a date."""
    items = []
    for teaser in teasers:
        href = f"/{slug(teaser)}-{rng.randint(1000, 99999)}.html"
        date = f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.{rng.randint(2015, 2024)}"
        items.append(f'<li><h3><a href="{href}">{html.escape(teaser)}</a></h3><span class="date">{date}</span></li>')
    return replace_article(page, article, '<ul class="teasers">' + "".join(items) + "</ul>")
