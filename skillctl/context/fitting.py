"""Fit what is sent to the model into a token budget, in three passes, or say it cannot be done.

``fit(history, budget)`` returns the messages to send for the next model request. It is a pure
function of (history, budget, policy, tokenizer): the history is never changed (the saved
history keeps everything); cleared results and notes are new ``Message`` objects in the result.
The words *head*, *first message*, *block*, *round* and *turn* are defined in
``skillctl.context.structure``. The budget covers the messages only: the caller subtracts what
else goes into the request (tool schemas, room for the reply).

Passes, each tried only when the one before did not make the request fit:

0. Everything fits: the history is sent as it is.
1. **Clear old tool results.** Candidates are the body's tool results that are (a) older than the
   *kept window* — the newest results whose estimates add up to at most
   ``keep_recent_fraction`` of the budget, and always at least the newest one — and (b) more than
   ``small_result_factor`` times the size of their cleared form. Oldest first, in batches of
   ``batch_size``, the fewest batches that make the request fit are cleared: their content is
   replaced by ``policy.cleared_note``. Only the last batch may be short, when candidates run out.
2. **Keep whole turns.** With every candidate cleared, send the head, ``turns_cut_note`` and the
   most recent whole turns that fit.
3. **Keep whole rounds.** The head, ``rounds_cut_note``, the user message that opened the last
   turn (when it is not the first message: it is the request being worked on) and the most recent
   whole rounds of that turn that fit — at least the newest call+result round and what follows it.
   So the newest tool result is never cleared, and is always sent while its turn is the last;
   only pass 2 may cut it, with its whole turn, once a newer user turn has begun.

When even pass 3 cannot fit, ``ContextTooLong`` (with the message the person reads) is raised:
the loop ends the run with outcome ``context_too_long`` and does not retry.

Why the cleared prefix is stable (prompt caching): with a fixed budget, a growing history only
appends messages. Each message's size is fixed (memoised), so the kept window's start can only
move forward, and candidates that leave it join the *end* of the oldest-first candidate list;
the list of earlier calls is a prefix of the list of later ones. The bytes to save only grow, so
the number of batches never shrinks. Hence each call clears the same results as the call before
plus, now and then, one more batch — and between two new batches every request begins with the
previous request, message for message.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from skillctl.context.policy import DEFAULT_POLICY, FitPolicy
from skillctl.context.sizing import MessageSizer, Size, sizer_for
from skillctl.context.structure import Layout, first_message_index, layout
from skillctl.errors import ConfigError, ContextTooLong
from skillctl.messages import Message
from skillctl.tokens import Tokenizer


@dataclass(frozen=True)
class FitResult:
    """What to send, and what fitting did to get there.

    ``messages``   the request's messages, in order.
    ``tokens``     their estimated size (never more than the budget).
    ``cleared``    tool results in ``messages`` whose content was replaced by the cleared note.
    ``dropped``    history messages not sent at all (cut by pass 2/3 or summarised).
    ``pass_used``  0 nothing needed, 1 clearing, 2 whole turns, 3 whole rounds.
    ``summarized`` history messages represented by a summary (``Compactor`` only).
    """

    messages: tuple[Message, ...]
    tokens: int
    cleared: int
    dropped: int
    pass_used: int
    summarized: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The figures for a run summary (without the messages themselves)."""
        return {
            "messages": len(self.messages),
            "tokens": self.tokens,
            "cleared": self.cleared,
            "dropped": self.dropped,
            "pass_used": self.pass_used,
            "summarized": self.summarized,
        }


def fit(
    history: Sequence[Message],
    budget: int,
    *,
    tokenizer: Tokenizer | MessageSizer | None = None,
    policy: FitPolicy | None = None,
) -> FitResult:
    """The request to send for ``history`` within ``budget`` tokens (see the module docstring).

    ``tokenizer`` replaces the per-script estimate (``None``); pass the same object on every call
    so that each message is counted once. Raises ``ConfigError`` for a bad budget, policy or
    history item and ``ContextTooLong`` when no request within the budget can keep the head and
    newest round.
    """
    policy = _check_policy(policy)
    _check_budget(budget)
    return fit_messages(_as_messages(history), budget, sizer_for(tokenizer), policy)


def fit_messages(
    history: tuple[Message, ...], budget: int, size: Size, policy: FitPolicy, pinned: int = 0
) -> FitResult:
    """``fit`` on checked arguments; ``pinned`` messages after the first message join the head."""
    sizes = list(map(size, history))
    total = sum(sizes)
    if total <= budget:
        return FitResult(history, total, 0, 0, 0)
    head_end = min(first_message_index(history) + 1 + pinned, len(history))
    plan = plan_clearing(history, sizes, head_end, budget, size, policy)
    if plan.total <= budget:
        messages, n_cleared = _render(history, plan, policy, 0, len(history))
        return FitResult(tuple(messages), plan.total, n_cleared, 0, 1)
    # Blocks and turns are only needed from pass 2 on: pass 1 stays a few list scans.
    return _cut(history, layout(history, pinned), plan, budget, size, policy)


# ------------------------------------------------------------------------------ pass 1


@dataclass(frozen=True)
class ClearingPlan:
    """Pass 1's decision. ``candidates`` are history indices, oldest first; the first ``chosen``
    are cleared; ``sizes`` are the sent sizes with those cleared, ``total`` their sum."""

    candidates: tuple[int, ...]
    chosen: int
    sizes: tuple[int, ...]
    total: int

    @property
    def cleared_indices(self) -> tuple[int, ...]:
        return self.candidates[: self.chosen]


def kept_window_start(tool_sizes: Sequence[int], keep_tokens: float) -> int:
    """Index (into ``tool_sizes``, oldest first) of the first result of the kept window: the
    newest results whose sizes add up to at most ``keep_tokens``, and always the newest one."""
    start = len(tool_sizes)
    acc = 0
    for j in range(len(tool_sizes) - 1, -1, -1):
        acc += tool_sizes[j]
        if acc > keep_tokens and j != len(tool_sizes) - 1:
            break
        start = j
    return start


def plan_clearing(
    history: Sequence[Message], sizes: list[int], head_end: int, budget: int, size: Size, policy: FitPolicy
) -> ClearingPlan:
    """Pass 1: the fewest whole batches of candidates, oldest first, that make the request fit —
    or all candidates when even that is not enough (passes 2 and 3 start from there)."""
    note_size = cleared_size(size, policy)
    tools = [i for i in range(head_end, len(history)) if history[i].role == "tool"]
    start = kept_window_start([sizes[i] for i in tools], policy.keep_recent_fraction * budget)
    threshold = policy.small_result_factor * note_size
    # A tool message carrying tool calls is malformed; leaving it alone keeps note_size exact.
    candidates = tuple(i for i in tools[:start] if sizes[i] > threshold and not history[i].tool_calls)

    excess = sum(sizes) - budget
    saved = chosen = 0
    batch = policy.batch_size
    while saved < excess and chosen < len(candidates):
        for i in candidates[chosen : chosen + batch]:
            saved += sizes[i] - note_size
        chosen = min(chosen + batch, len(candidates))

    sent = list(sizes)
    for i in candidates[:chosen]:
        sent[i] = note_size
    return ClearingPlan(candidates, chosen, tuple(sent), sum(sizes) - saved)


def cleared_size(size: Size, policy: FitPolicy) -> int:
    """Size of a tool result whose content is the cleared note (it does not depend on which)."""
    return size(note_message("tool", policy.cleared_note))


@lru_cache(maxsize=64)
def note_message(role: str, text: str) -> Message:
    """One message object per note text, so a tokenizer's memo counts each note once."""
    return Message(role, text)  # type: ignore[arg-type]


_CLEARED_ATTR = "_skillctl_cleared_form"


def cleared(message: Message, note: str) -> Message:
    """``message`` with its content replaced by ``note``; the original's value is untouched.

    The cleared form is memoised on the original the way ``cached_property`` memoises
    ``Message.tokens`` (in the instance ``__dict__``, outside equality and ``to_dict``), so
    consecutive requests hold the very same objects: no re-allocation, no re-estimate, and prefix
    comparisons short-cut on identity. Keyed by identity, it costs no hashing of long contents.
    """
    memo = message.__dict__.get(_CLEARED_ATTR)
    if memo is not None and memo.content == note:
        return memo
    form = message.with_content(note)
    form.meta["cleared"] = True  # meta is not part of equality: for readers of saved requests
    message.__dict__[_CLEARED_ATTR] = form
    return form


def _render(
    history: Sequence[Message], plan: ClearingPlan, policy: FitPolicy, start: int, end: int
) -> tuple[list[Message], int]:
    """The sent forms of ``history[start:end]``, and how many of them are cleared."""
    out = list(history[start:end])
    note = policy.cleared_note
    n_cleared = 0
    for i in plan.cleared_indices:  # ascending
        if start <= i < end:
            out[i - start] = cleared(history[i], note)
            n_cleared += 1
    return out, n_cleared


# ------------------------------------------------------------------------------ passes 2 and 3


def _cut(
    history: Sequence[Message], lay: Layout, plan: ClearingPlan, budget: int, size: Size, policy: FitPolicy
) -> FitResult:
    n, h = lay.n, lay.head_end
    sent = plan.sizes
    head_tokens = sum(sent[:h])
    suffix = [0] * (n + 1)  # suffix[i] = sent size of history[i:]
    for i in range(n - 1, h - 1, -1):
        suffix[i] = suffix[i + 1] + sent[i]

    # Pass 2: the most recent whole turns that fit. Turn starts ascend, so the first that fits
    # keeps the most.
    note2 = note_message("user", policy.turns_cut_note)
    s2 = size(note2)
    for t in lay.turn_starts:
        if head_tokens + s2 + suffix[t] <= budget:
            return _assemble(history, plan, policy, h, note2, [(t, n)], head_tokens + s2 + suffix[t], 2, n)

    # Pass 3: the most recent whole rounds of the last turn.
    if lay.turn_starts:
        opener = lay.turn_starts[-1]
        opener_end = lay.block_end(opener)
    else:
        opener = opener_end = h
    note3 = note_message("user", policy.rounds_cut_note)
    fixed = head_tokens + size(note3) + (suffix[opener] - suffix[opener_end])
    rounds = lay.block_starts[bisect_left(lay.block_starts, opener_end) :]
    # At least the newest call+result round is kept, with whatever follows it.
    newest = next((b for b in reversed(rounds) if history[b].tool_calls), None)
    if newest is not None:
        rounds = rounds[: rounds.index(newest) + 1]
    for b in rounds:
        if fixed + suffix[b] <= budget:
            kept = [(opener, opener_end), (b, n)]
            return _assemble(history, plan, policy, h, note3, kept, fixed + suffix[b], 3, n)
    if not rounds and fixed <= budget:
        return _assemble(history, plan, policy, h, note3, [(opener, opener_end)], fixed, 3, n)
    need = fixed + (suffix[rounds[-1]] if rounds else 0)
    raise ContextTooLong(
        f"the system prompt, first message and newest tool round need about {need} tokens; "
        f"the budget is {budget}"
    )


def _assemble(
    history: Sequence[Message],
    plan: ClearingPlan,
    policy: FitPolicy,
    head_end: int,
    note: Message,
    kept: Sequence[tuple[int, int]],
    tokens: int,
    pass_used: int,
    n: int,
) -> FitResult:
    head, c1 = _render(history, plan, policy, 0, head_end)
    body: list[Message] = []
    c2 = 0
    for start, end in kept:
        part, c = _render(history, plan, policy, start, end)
        body += part
        c2 += c
    kept_n = sum(end - start for start, end in kept)
    return FitResult((*head, note, *body), tokens, c1 + c2, n - head_end - kept_n, pass_used)


# ------------------------------------------------------------------------------ checks


def _check_policy(policy: FitPolicy | None) -> FitPolicy:
    if policy is None:
        return DEFAULT_POLICY
    if not isinstance(policy, FitPolicy):
        raise ConfigError(f"fit policy must be a FitPolicy, got {type(policy).__name__}; build one with FitPolicy(...)")
    return policy


def _check_budget(budget: object) -> None:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ConfigError(f"context budget must be a positive whole number of tokens, got {budget!r}")


def _as_messages(history: Sequence[Message]) -> tuple[Message, ...]:
    if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
        raise ConfigError(
            f"history must be a sequence of Message, got {type(history).__name__}; "
            "pass the list of messages of the run"
        )
    msgs = tuple(history)
    for i, m in enumerate(msgs):
        if not isinstance(m, Message):
            raise ConfigError(
                f"history item {i} is a {type(m).__name__}, not a Message; build it with Message.from_dict"
            )
    return msgs
