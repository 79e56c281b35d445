"""Errors that are the recipe's or the input's to fix, not the code's: a command reports them in a few lines, with
exit status 2, as it reports an invalid recipe (flows/failure_report.py)."""
from __future__ import annotations


class TooLittleData(ValueError):
    """The corpus is too small for a step: the message has the numbers found and needed and the recipe keys that
    would change them."""
