"""What the domain stage clusters: a document's words for its topic, its layout and style for its format.

Topic: hashed counts of words of three letters or more (no numbers, no markup remnants), so that no vocabulary
has to be fitted and a document's vector depends on its text alone. Format: a few statistics of lines, characters
and sentences that hold in any language written with punctuation (how long the lines are, how many look like list
items, headings or table rows, how much is digits, punctuation or capitals, how many sentences are questions)."""
from __future__ import annotations

import math
import re

import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer

WORD_PATTERN = r"(?u)\b[^\W\d_]{3,}\b"
FORMAT_FEATURES = ("log_chars", "log_lines", "line_chars", "short_lines", "list_lines", "label_lines", "table_lines",
                   "sentence_lines", "digits", "punctuation", "capitals", "questions", "word_chars")
LIST_ITEM = re.compile(r"^\s*(?:[-*•·▪–]|\d{1,3}[.)]|[a-z][.)])\s")
PUNCTUATION = re.compile(r"[^\w\s]")


def word_vectorizer(features: int) -> HashingVectorizer:
    return HashingVectorizer(n_features=features, token_pattern=WORD_PATTERN, alternate_sign=False, norm=None,
                             dtype=np.float32)


def format_vector(text: str) -> list[float]:
    lines = [line for line in text.split("\n") if line.strip()] or [""]
    chars = max(1, len(text))
    letters = sum(ch.isalpha() for ch in text) or 1
    words = text.split()
    ends = text.count(".") + text.count("!") + text.count("?")
    share = lambda test: sum(1 for line in lines if test(line)) / len(lines)  # noqa: E731
    return [math.log1p(len(text)), math.log1p(len(lines)), sum(map(len, lines)) / len(lines) / 100,
            share(lambda line: len(line.strip()) < 40), share(LIST_ITEM.match),
            share(lambda line: line.rstrip().endswith(":")), share(lambda line: "|" in line or "\t" in line),
            share(lambda line: line.rstrip().endswith((".", "!", "?", '"', "»", "”"))),
            sum(ch.isdigit() for ch in text) / chars, len(PUNCTUATION.findall(text)) / chars,
            sum(ch.isupper() for ch in text) / letters, text.count("?") / (ends + 1),
            sum(map(len, words)) / max(1, len(words)) / 10]


def format_matrix(texts: list[str]) -> np.ndarray:
    return np.array([format_vector(text) for text in texts], np.float64).reshape(len(texts), len(FORMAT_FEATURES))
