"""Gopher quality and repetition attributes (Rae et al. 2021, appendix A.1.1 and table A1).

Each function returns raw measurements; the thresholds live in the filter (configs.quality), so changing a
threshold never recomputes these.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from tasks.quality.stop_words import stop_words_for
from tasks.quality.words import UNSPACED_LANGUAGES, punctuation_only, split_lines, split_paragraphs

TOP_NGRAMS = (2, 3, 4)
DUPLICATE_NGRAMS = (5, 6, 7, 8, 9, 10)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


def gopher_quality(text: str, words: list[str], lang: str | None) -> dict:
    """Word-count, word-length, symbol, bullet, ellipsis, alphabetic and stop-word measurements.

    Word-based measurements are None for languages written without spaces (their rules do not apply). Each distinct
    word is judged once, weighted by how often it occurs (a text repeats most of its words)."""
    lines = text.splitlines() or [""]
    n_words = max(len(words), 1)
    counts = Counter(words)
    content = [(word, count) for word, count in counts.items() if not punctuation_only(word)]
    content_words = sum(count for _, count in content)
    spaced = (lang or "").split("_")[0] not in UNSPACED_LANGUAGES
    stop_words = stop_words_for(lang) if spaced else None
    return {
        "gopher_words": content_words if spaced else None,
        # the integer sum is exact, so this is the mean numpy gives over the content words' lengths
        "gopher_avg_word_length": (sum(len(word) * count for word, count in content) / content_words
                                   if content_words else 0.0) if spaced else None,
        "gopher_hash_ratio": text.count("#") / n_words,
        "gopher_ellipsis_ratio": (text.count("...") + text.count("…")) / n_words,
        "gopher_bullet_lines_ratio": sum(line.lstrip().startswith(("•", "-")) for line in lines) / len(lines),
        "gopher_ellipsis_lines_ratio": sum(line.rstrip().endswith(("...", "…")) for line in lines) / len(lines),
        "gopher_alpha_words_ratio": sum(count for word, count in counts.items() if _has_letter(word)) / n_words,
        "gopher_stop_words": len(stop_words.intersection(counts)) if stop_words is not None else None,
    }


def _has_letter(word: str) -> bool:
    return word[:1].isalpha() or any(char.isalpha() for char in word)     # most words start with one


def gopher_repetition(text: str, words: list[str]) -> dict:
    """Shares of the text's characters in duplicated paragraphs, lines and word n-grams."""
    length = max(len(text), 1)
    paragraphs = split_paragraphs(text)
    dup_paragraphs, dup_paragraph_chars = duplicates(paragraphs)
    lines = split_lines(text)
    dup_lines, dup_line_chars = duplicates(lines)
    attributes = {
        "rep_dup_para_frac": dup_paragraphs / len(paragraphs),
        "rep_dup_para_char_frac": dup_paragraph_chars / length,
        "rep_dup_line_frac": dup_lines / len(lines),
        "rep_dup_line_char_frac": dup_line_chars / length,
    }
    ids = _word_ids(words)
    word_chars = np.fromiter(map(len, words), np.int64, len(words))
    for n in TOP_NGRAMS:
        attributes[f"rep_top_{n}gram_char_frac"] = _top_ngram_chars(ids, word_chars, n) / length
    repeating = None        # where the last, shorter n-grams repeat: the only places a longer one can
    for n in DUPLICATE_NGRAMS:
        chars, repeating = _duplicated_ngram_chars(ids, word_chars, n, repeating)
        attributes[f"rep_dup_{n}gram_char_frac"] = chars / length
    return attributes


def duplicates(items: list[str]) -> tuple[int, int]:
    """Items seen before, and their characters (every repeat counts, the first occurrence does not)."""
    seen: set[str] = set()
    count = chars = 0
    for item in items:
        if item in seen:
            count += 1
            chars += len(item)
        else:
            seen.add(item)
    return count, chars


def _word_ids(words: list[str]) -> np.ndarray:
    """Each word's id: the order of its first occurrence."""
    vocabulary = {word: index for index, word in enumerate(dict.fromkeys(words))}
    return np.fromiter(map(vocabulary.__getitem__, words), np.uint64, len(words))


def _ngram_hashes(ids: np.ndarray, n: int, positions: np.ndarray | None = None) -> np.ndarray:
    """A 64-bit hash of every n-gram of word ids, or of those starting at `positions` (wrapping multiply-add;
    collisions are negligible here)."""
    starts = slice(0, max(0, len(ids) - n + 1)) if positions is None else positions
    hashes = np.zeros(len(ids[starts]), np.uint64)
    for offset in range(n):
        hashes = hashes * _MULTIPLIER + ids[offset:][starts] + np.uint64(1)
    return hashes


def _top_ngram_chars(ids: np.ndarray, word_chars: np.ndarray, n: int) -> int:
    """Characters covered by the most frequent n-gram (its length with spaces, times its count).

    Among equally frequent n-grams the one seen first counts, as Counter.most_common does."""
    if len(ids) < n:
        return 0
    hashes = _ngram_hashes(ids, n)
    unique, first, counts = np.unique(hashes, return_index=True, return_counts=True)
    best = np.flatnonzero(counts == counts.max())
    start = int(first[best].min())
    return (int(word_chars[start:start + n].sum()) + n - 1) * int(counts.max())


def _duplicated_ngram_chars(ids: np.ndarray, word_chars: np.ndarray, n: int,
                            candidates: np.ndarray | None = None) -> tuple[int, np.ndarray]:
    """Characters of n-grams that repeat an earlier one, scanning left to right and jumping over each repeat
    (so overlapping repeats are not counted twice); characters exclude spaces. Only the positions of n-grams that
    occur more than once are visited: the others are never a repeat and never make one. `candidates`: where a
    shorter n-gram occurs more than once (None: anywhere), the only places an n-gram it begins can (every
    occurrence of a repeating n-gram is among them, so its count is the same). Also returns where the n-grams
    occurring more than once start, the next n's candidates."""
    positions = np.arange(max(0, len(ids) - n + 1)) if candidates is None else candidates[candidates <= len(ids) - n]
    if not len(positions):
        return 0, positions
    _, group, counts = np.unique(_ngram_hashes(ids, n, None if candidates is None else positions),
                                 return_inverse=True, return_counts=True)
    repeatable = np.flatnonzero(counts[group] > 1)
    if not len(repeatable):
        return 0, positions[repeatable]
    starts = np.concatenate(([0], np.cumsum(word_chars))).tolist()
    seen: set[int] = set()
    repeated = resume_at = 0
    for position, ngram in zip(positions[repeatable].tolist(), group[repeatable].tolist()):
        if position < resume_at:                # inside a repeat already counted
            continue
        if ngram in seen:
            repeated += starts[position + n] - starts[position]
            resume_at = position + n
        else:
            seen.add(ngram)
    return repeated, positions[repeatable]
