"""The run's wall-clock deadline, shared by everything that spends the run's time.

``--max-seconds`` is one budget for the whole run. The loop checks it between steps, but a
step can take long by itself: a command may ask for an hour. So the shell tool cuts each
command's timeout to the time left (``remaining``), and sub-agents, which run inside one of
their parent's steps, share the parent's ``Deadline`` instead of starting a budget of their own.

The clock starts when the first agent of the run starts (``start`` is idempotent: a sub-agent
starting later keeps the parent's start).
"""

from __future__ import annotations

import time
from typing import Callable


class Deadline:
    """``seconds`` of wall clock from ``start()``; None means no budget at all."""

    def __init__(self, seconds: float | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self.started: float | None = None

    def start(self) -> None:
        if self.started is None:
            self.started = self.clock()

    def elapsed(self) -> float:
        return 0.0 if self.started is None else self.clock() - self.started

    def remaining(self) -> float | None:
        """Seconds left; None when there is no budget or the run has not started."""
        if self.seconds is None or self.started is None:
            return None
        return self.seconds - self.elapsed()

    def passed(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def cap(self, timeout_s: float) -> tuple[float, bool]:
        """``timeout_s`` cut to the time left, and whether the cut applied (the deadline, not
        the command's own timeout, will end the command)."""
        left = self.remaining()
        if left is None or left >= timeout_s:
            return timeout_s, False
        return left, True
