"""How counts and severities are said to people, in one place: ``count(2, "file")`` is
"2 files", ``count(1, "file")`` "1 file"; a diagnostic's level has one word (``SEVERITY_WORD``)
in its line and in the summary's counts. JSON keeps the levels' own names."""

from __future__ import annotations

# The level a diagnostic carries -> the word lines and counts use for it.
SEVERITY_WORD = {"error": "error", "warning": "warning", "info": "note"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """``word`` as it goes with ``n``: ``many`` (default ``word + "s"``) unless ``n`` is 1."""
    return word if n == 1 else (many if many is not None else word + "s")


def count(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``: "1 file", "0 files", "3 versions", "2 entries" (``many="entries"``)."""
    return f"{n} {plural(n, word, many)}"
