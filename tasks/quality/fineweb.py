"""FineWeb attributes (Penedo et al. 2024, section 3.3.4; datatrove's FineWebQualityFilter)."""
from __future__ import annotations

from tasks.quality.gopher import duplicates
from tasks.quality.words import ends_in_sentence_terminal

SHORT_LINE_CHARS = 30   # FineWeb's "short line": at most 30 characters


def fineweb_attributes(text: str, words: list[str]) -> dict:
    """Share of lines ending in punctuation, of short lines, of characters in repeated lines, newlines per word.

    Empty lines are ignored; a text with no non-empty line gets None (the filter drops it as empty)."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return {"fineweb_line_punct_ratio": None, "fineweb_short_line_ratio": None,
                "fineweb_dup_line_char_ratio": None, "fineweb_newline_ratio": None}
    return {
        "fineweb_line_punct_ratio": sum(ends_in_sentence_terminal(line) for line in lines) / len(lines),
        "fineweb_short_line_ratio": sum(len(line) <= SHORT_LINE_CHARS for line in lines) / len(lines),
        "fineweb_dup_line_char_ratio": duplicates(lines)[1] / max(len(text) - text.count("\n"), 1),
        "fineweb_newline_ratio": text.count("\n") / max(len(words), 1),
    }
