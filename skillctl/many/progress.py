"""Progress of many runs for people: one line per finished run, led by a bar and a count."""

from __future__ import annotations

from typing import Callable

BAR_WIDTH = 20


class RunProgress:
    """``done(text)`` prints ``[#####.....] 7/32 text``; ``note(text)`` prints a plain line."""

    def __init__(self, total: int, emit: Callable[[str], None]) -> None:
        self.total = max(total, 0)
        self.count = 0
        self.emit = emit

    def done(self, text: str) -> None:
        self.count += 1
        filled = BAR_WIDTH * self.count // self.total if self.total else BAR_WIDTH
        self.emit(f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.count}/{self.total} {text}")

    def note(self, text: str) -> None:
        self.emit(text)
