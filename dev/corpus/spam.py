"""Spam as crawlers find it: keyword-stuffed articles, link farms and spun word salad."""
from __future__ import annotations

import html
import random
from collections.abc import Sequence

from dev.corpus.html_edit import Paragraph, paragraph_html, replace_article, replace_spans, set_title, vocabulary
from dev.corpus.urls import slug

KEYWORDS = ("best online casino", "free spins no deposit", "payday loans", "cheap replica watches",
            "buy instagram followers", "weight loss pills", "crypto trading bot", "essay writing service",
            "cheap flights", "bitcoin casino bonus", "seo backlinks", "make money online", "forex signals",
            "cbd oil", "keto diet pills", "cheap hotels", "car insurance quotes", "mortgage rates",
            "online dating", "sports betting tips")
FILLERS = ("best", "cheap", "top", "free", "online", "buy", "discount", "2024", "review", "near me", "official",
           "sale", "guaranteed", "fast", "legit", "no prescription", "instant", "bonus", "deal", "now")
SPAM_TLDS = ("xyz", "top", "online", "site", "info", "club", "biz")


def keyword_stuffed(page: str, article: Sequence[Paragraph], rng: random.Random) -> str:
    """The article replaced by keyword repetition, with a keyword title and a hidden keyword block."""
    keywords = rng.sample(KEYWORDS, 4)
    stuffed = [_stuffed_sentences(keywords, rng, rng.randint(5, 9)) for _ in range(rng.randint(4, 8))]
    hidden = '<div style="display:none">' + html.escape(", ".join(keywords * 12)) + "</div>"
    new_article = "\n".join(paragraph_html(article[0].attributes, text) for text in stuffed) + hidden
    title = " | ".join(keyword.title() for keyword in keywords)
    return set_title(replace_article(page, article, new_article), title)


def link_farm(rng: random.Random) -> str:
    """A standalone page of hundreds of keyword links to throw-away domains."""
    keywords = rng.sample(KEYWORDS, 3)
    sections = []
    for keyword in keywords:
        links = []
        for _ in range(rng.randint(60, 140)):
            anchor = f"{rng.choice(FILLERS)} {rng.choice(KEYWORDS)} {rng.choice(FILLERS)}"
            domain = f"{slug(rng.choice(KEYWORDS))}{rng.randint(1, 999)}.{rng.choice(SPAM_TLDS)}"
            links.append(f'<li><a href="https://{domain}/{slug(anchor)}.html">{html.escape(anchor)}</a></li>')
        sections.append(f"<h2>{html.escape(keyword.title())}</h2><ul>{''.join(links)}</ul>")
    title = f"{keywords[0].title()} - {keywords[1].title()} | Top Links {rng.randint(2019, 2024)}"
    intro = html.escape(_stuffed_sentences(keywords, rng, 3))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<meta name="keywords" content="{html.escape(", ".join(keywords))}"></head><body>'
            f"<h1>{html.escape(keywords[0].title())}</h1><p>{intro}</p>{''.join(sections)}</body></html>")


def word_salad(page: str, article: Sequence[Paragraph], rng: random.Random) -> str:
    """The article's paragraphs replaced by spun text: its own words shuffled, with a keyword slipped in."""
    words = vocabulary(article)
    keyword = rng.choice(KEYWORDS)
    spun = []
    for paragraph in article:
        salad = rng.choices(words, k=len(paragraph.text.split()))
        for position in range(0, len(salad), rng.randint(8, 15)):
            salad.insert(position, keyword)
        spun.append((paragraph.start, paragraph.end, paragraph_html(paragraph.attributes, " ".join(salad))))
    return replace_spans(page, spun)


def _stuffed_sentences(keywords: list[str], rng: random.Random, count: int) -> str:
    sentences = []
    for _ in range(count):
        words = [rng.choice(FILLERS), rng.choice(keywords), rng.choice(FILLERS), rng.choice(keywords),
                 rng.choice(FILLERS), rng.choice(keywords)]
        sentences.append(" ".join(words).capitalize() + rng.choice(("!", ".", "!!")))
    return " ".join(sentences)
