"""The shape of a history, as fitting sees it.

Definitions (they are the contract of ``fit``; tests use the same words):

* **System head** — the leading ``system`` messages (c₁: instructions, skills catalog). Always sent.
* **First message** — the first message that is not ``system``: the task or the person's first
  request. Always sent, right after the system head. Together they are the **head**; the
  compactor pins its summary there too.
* **Body** — everything after the head.
* **Block** — a message plus the ``tool`` messages that directly follow it. A tool result always
  directly follows the assistant message that called it (Chat Completions rules), so a block is
  the smallest unit that never separates a call from its result; cuts happen only between blocks.
* **Round** — a block opened by an assistant message with tool calls: the calls and their results.
* **Turn** — a ``user`` message in the body and every block after it up to the next ``user``
  message. The blocks of the body before its first ``user`` message continue the first message's
  turn (a sub-agent, with one user message, has only that turn).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Sequence

from skillctl.messages import Message


@dataclass(frozen=True)
class Layout:
    """Indices into one history (``n`` messages)."""

    n: int
    head_end: int  # history[:head_end] is the head
    block_starts: tuple[int, ...]  # ascending; block i spans [block_starts[i], next start or n)
    turn_starts: tuple[int, ...]  # the block starts opened by a user message, ascending

    def block_end(self, start: int) -> int:
        """End (exclusive) of the block that contains index ``start``."""
        i = bisect_right(self.block_starts, start)
        return self.block_starts[i] if i < len(self.block_starts) else self.n


def first_message_index(history: Sequence[Message]) -> int:
    """Index of the first non-system message, or ``len(history)`` when there is none."""
    for i, m in enumerate(history):
        if m.role != "system":
            return i
    return len(history)


def layout(history: Sequence[Message], pinned: int = 0) -> Layout:
    """Split ``history`` into head, blocks and turns; ``pinned`` extra messages after the first
    message belong to the head (the compactor's summary). O(n), no copies of messages."""
    n = len(history)
    head_end = min(first_message_index(history) + 1 + pinned, n)
    blocks: list[int] = []
    turns: list[int] = []
    for i in range(head_end, n):
        role = history[i].role
        # A tool message right after the head has lost its call (cut by an earlier summary, or a
        # malformed history): it opens a block of its own rather than joining the head.
        if role != "tool" or i == head_end:
            blocks.append(i)
            if role == "user":
                turns.append(i)
    return Layout(n, head_end, tuple(blocks), tuple(turns))
