"""How much command output a run keeps in its transcript: per shell call and per run.

The transcript records each command's output as captured (up to the sandbox's capture cap),
not only the head and tail the model read. Uncapped, eight commands flooding at once, step
after step, made a 2 GB transcript. So each shell call may keep at most ``per_call``
characters of output across all its commands' stdout and stderr, and the whole run at most
``per_run``: short streams keep everything, long ones share the rest evenly and keep their
head and tail around a marker saying how much is missing and why. Nothing else keeps the
full output: a command whose output matters should write it to a file in the workspace.

What the model read is not affected: it is in the transcript's tool messages either way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from skillctl.sandbox.output import cut_middle

DEFAULT_PER_CALL = 1024 * 1024  # characters of output one shell call keeps in the transcript
DEFAULT_PER_RUN = 16 * 1024 * 1024  # … and all calls of a run together (sub-agents included)

_MARKER = (
    "\n[… {{n}} characters of this output are not in the transcript ({why}); nothing else kept them: "
    "write output that matters to a file in the workspace …]\n"
)


def _shares(lengths: list[int], budget: int) -> list[int]:
    """Water-filling: streams shorter than an even share keep everything; the others split
    what remains evenly (the earlier ones get the odd characters). Deterministic."""
    shares = [0] * len(lengths)
    left, remaining = budget, len(lengths)
    for i in sorted(range(len(lengths)), key=lambda k: (lengths[k], k)):
        share = min(lengths[i], left // remaining)
        shares[i] = share
        left -= share
        remaining -= 1
    return shares


@dataclass
class OutputBudget:
    """The transcript's share of command output, used up as a run goes. Thread-safe."""

    per_call: int = DEFAULT_PER_CALL
    per_run: int = DEFAULT_PER_RUN
    used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.per_call < 0 or self.per_run < 0:
            raise ValueError("transcript output caps must not be negative")

    def fit(self, texts: list[str]) -> list[tuple[str, int]]:
        """Each of one call's output ``texts`` as the transcript keeps it, with the number of
        characters left out (0 when kept whole)."""
        total = sum(len(t) for t in texts)
        with self._lock:
            room = max(0, self.per_run - self.used)
            budget = min(self.per_call, room)
            if total <= budget:
                self.used += total
                return [(t, 0) for t in texts]
            why = (
                f"over the cap of {self.per_call} characters per shell call"
                if budget == self.per_call
                else f"the run's cap of {self.per_run} characters of command output is used up"
                if room == 0
                else f"over what is left of the run's cap of {self.per_run} characters"
            )
            marker = _MARKER.format(why=why)
            kept = []
            for text, share in zip(texts, _shares([len(t) for t in texts], budget)):
                if share >= len(text):
                    kept.append((text, 0))
                    continue
                if share >= len(marker.format(n=len(text))):
                    kept.append(cut_middle(text, share, marker))
                else:  # no room even for the marker and a little text: the marker alone
                    kept.append((marker.format(n=len(text)), len(text)))
            self.used += sum(len(c) for c, _ in kept)
            return kept
