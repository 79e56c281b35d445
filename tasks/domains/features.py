"""What the domain stage clusters: a document's words for its topic, its layout and style for its format.

Topic: hashed counts of words of three letters or more (no numbers, no markup remnants), so that no vocabulary
has to be fitted and a document's vector depends on its text alone. Format: a few statistics of lines, characters
and sentences that hold in any language written with punctuation (how long the lines are, how many look like list
items, headings or table rows, how much is digits, punctuation or capitals, how many sentences are questions)."""
from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import HashingVectorizer

WORD_PATTERN = r"(?u)\b[^\W\d_]{3,}\b"
FORMAT_FEATURES = ("log_chars", "log_lines", "line_chars", "short_lines", "list_lines", "label_lines", "table_lines",
                   "sentence_lines", "digits", "punctuation", "capitals", "questions", "word_chars")
LIST_ITEM = re.compile(r"^\s*(?:[-*•·▪–]|\d{1,3}[.)]|[a-z][.)])\s")
PUNCTUATION = re.compile(r"[^\w\s]")


def word_vectorizer(features: int) -> HashingVectorizer:
    return HashingVectorizer(n_features=features, token_pattern=WORD_PATTERN, alternate_sign=False, norm=None,
                             dtype=np.float32)


# Which of the first code points (every script but CJK, Hangul and the rest above U+3000) are letters, digits and
# capitals, by str's own tests: a text's counts are then one table lookup per character in numpy, not a Python call
# per character (which was most of the stage's fit: 0.85 s for 3.6 MB of text, three passes of it).
TABLED = 0x3000
_CLASSES = np.array([(char.isalpha(), char.isdigit(), char.isupper()) for char in map(chr, range(TABLED))], np.int64)


def character_classes(text: str) -> tuple[int, int, int]:
    """How many characters of `text` are letters, digits and capitals (str.isalpha, isdigit, isupper)."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    tabled = codes < TABLED
    counts = _CLASSES[codes[tabled]].sum(0)
    if not tabled.all():
        rest = "".join(map(chr, codes[~tabled].tolist()))
        counts = counts + [sum(map(str.isalpha, rest)), sum(map(str.isdigit, rest)), sum(map(str.isupper, rest))]
    return int(counts[0]), int(counts[1]), int(counts[2])


def format_vector(text: str) -> list[float]:
    lines = [line for line in text.split("\n") if line.strip()] or [""]
    chars = max(1, len(text))
    letters, digits, capitals = character_classes(text)
    letters = letters or 1
    words = text.split()
    ends = text.count(".") + text.count("!") + text.count("?")
    share = lambda test: sum(1 for line in lines if test(line)) / len(lines)  # noqa: E731
    return [math.log1p(len(text)), math.log1p(len(lines)), sum(map(len, lines)) / len(lines) / 100,
            share(lambda line: len(line.strip()) < 40), share(LIST_ITEM.match),
            share(lambda line: line.rstrip().endswith(":")), share(lambda line: "|" in line or "\t" in line),
            share(lambda line: line.rstrip().endswith((".", "!", "?", '"', "»", "”"))),
            digits / chars, len(PUNCTUATION.findall(text)) / chars, capitals / letters, text.count("?") / (ends + 1),
            sum(map(len, words)) / max(1, len(words)) / 10]


def format_matrix(texts: list[str]) -> np.ndarray:
    return np.array([format_vector(text) for text in texts], np.float64).reshape(len(texts), len(FORMAT_FEATURES))


def sample_features(texts: list[str], features: int) -> tuple[sparse.csr_matrix, np.ndarray, dict]:
    """What the fit reads of sampled texts, computed where they are sampled (per shard, in parallel) rather than
    in the one fit call: hashed word counts and format vectors (rows per text, so any shard's rows stacked in the
    sample's order are what the whole sample would give), and the vocabulary: each word with its count and its
    hashed feature, which the cards name features by. Each text is tokenized once for all three."""
    analyse = word_vectorizer(features).build_analyzer()
    tokens = [analyse(text) for text in texts]
    hashing = HashingVectorizer(n_features=features, analyzer=_given, alternate_sign=False, norm=None,
                                dtype=np.float32)
    frequency = Counter(word for words in tokens for word in words)
    words = list(frequency)
    hashed = hashing.transform([[word] for word in words]).indices.tolist()
    return (hashing.transform(tokens), format_matrix(texts),
            {word: (frequency[word], feature) for word, feature in zip(words, hashed)})


def _given(tokens: list[str]) -> list[str]:
    """The analyzer of texts tokenized already (by `word_vectorizer`'s): hashed as that vectorizer hashes them."""
    return tokens
