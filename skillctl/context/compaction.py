"""Optional summarising compaction: summarise the oldest part instead of cutting it.

Off by default: ``fit`` never calls a model. A loop configured for compaction builds one
``Compactor`` per run around a ``summarize(messages) -> str`` callable (backed by the model) and
calls ``Compactor.fit`` where it would call ``fit``.

Contract of ``Compactor.fit(history, budget)``:

* Pass 1 (clearing) is tried first, exactly as in ``fit``; while it is enough, no model is called.
* When it is not, the oldest whole blocks of the body are summarised — as many as needed for the
  rest, cleared, to fit in ``target_fraction`` of the budget, so one summary serves many calls —
  and the summary is pinned right after the first message, with ``policy.summary_header``.
  ``summarize`` receives those blocks as they would be sent (cleared results stay cleared) and,
  from the second compaction on, the previous summary first, so summaries chain.
* The summary and the part of the history it stands for are remembered and reused while the
  history only grows, which keeps the request prefix stable. A history that is not an extension
  of the one summarised starts over.
* Passes 2 and 3 remain as a fallback (a summary that came out too long, or ``summarize``
  returning no text); ``ContextTooLong`` is raised as in ``fit``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from skillctl.context.fitting import (
    FitResult,
    _as_messages,
    _check_budget,
    _check_policy,
    _render,
    fit_messages,
    plan_clearing,
)
from skillctl.context.policy import FitPolicy
from skillctl.context.sizing import MessageSizer, sizer_for
from skillctl.context.structure import first_message_index, layout
from skillctl.errors import ConfigError, ContextTooLong
from skillctl.messages import Message
from skillctl.tokens import Tokenizer

Summarize = Callable[[Sequence[Message]], str]


class Compactor:
    """Summarising fitter for one run; see the module docstring for the contract."""

    def __init__(
        self,
        summarize: Summarize,
        *,
        policy: FitPolicy | None = None,
        tokenizer: Tokenizer | MessageSizer | None = None,
        target_fraction: float = 0.5,
    ) -> None:
        if not callable(summarize):
            raise ConfigError(f"summarize must be callable (messages -> text), got {type(summarize).__name__}")
        if not isinstance(target_fraction, (int, float)) or not 0 < target_fraction <= 1:
            raise ConfigError(f"compaction target_fraction must be in (0, 1], got {target_fraction!r}")
        self.summarize = summarize
        self.policy = _check_policy(policy)
        self.size = sizer_for(tokenizer)
        self.target_fraction = float(target_fraction)
        self.calls = 0  # summarize calls made
        self._summary: Message | None = None
        self._end = 0  # history[head_end:_end] is what the summary stands for
        self._anchor: Message | None = None  # history[_end - 1] when summarised
        self._first: Message | None = None  # history[head_end - 1] when summarised

    @property
    def summary(self) -> Message | None:
        """The current summary message, if any."""
        return self._summary

    def fit(self, history: Sequence[Message], budget: int) -> FitResult:
        _check_budget(budget)
        msgs = _as_messages(history)
        head_end = first_message_index(msgs) + 1
        if self._summary is not None and not self._extends(msgs, head_end):
            self._summary, self._anchor, self._first, self._end = None, None, None, 0

        virtual, pinned, start = self._virtual(msgs, head_end)
        try:
            result = fit_messages(virtual, budget, self.size, self.policy, pinned)
        except ContextTooLong:
            result = None
        if result is not None and result.pass_used <= 1:
            return self._account(result, start - head_end)
        return self._compact(msgs, head_end, virtual, pinned, start, budget)

    # -------------------------------------------------------------------------- internals

    def _extends(self, msgs: tuple[Message, ...], head_end: int) -> bool:
        return (
            len(msgs) >= self._end
            and head_end < self._end
            and msgs[head_end - 1] == self._first
            and msgs[self._end - 1] == self._anchor
        )

    def _virtual(self, msgs: tuple[Message, ...], head_end: int) -> tuple[tuple[Message, ...], int, int]:
        """The history with the summary in place of what it stands for; the number of pinned
        messages; the index in ``msgs`` where the unsummarised part starts."""
        if self._summary is None:
            return msgs, 0, head_end
        return (*msgs[:head_end], self._summary, *msgs[self._end :]), 1, self._end

    def _compact(
        self,
        msgs: tuple[Message, ...],
        head_end: int,
        virtual: tuple[Message, ...],
        pinned: int,
        start: int,
        budget: int,
    ) -> FitResult:
        size, policy = self.size, self.policy
        lay = layout(virtual, pinned)
        sizes = [size(m) for m in virtual]
        plan = plan_clearing(virtual, sizes, lay.head_end, budget, size, policy)
        span_start = lay.head_end - pinned  # the previous summary, if any, is summarised again
        head_tokens = sum(plan.sizes[:span_start])
        target = self.target_fraction * budget - head_tokens

        tail = 0
        cut = None
        # Walk blocks newest first: the cut is the oldest block start whose tail still fits the
        # target; at least one block is summarised and the newest block is always kept.
        starts = lay.block_starts
        bounds = (*starts[1:], lay.n)
        for b, end in zip(reversed(starts), reversed(bounds)):
            tail += sum(plan.sizes[b:end])
            if b <= lay.head_end:
                break
            if tail > target and cut is not None:
                break
            cut = b
        if cut is None:  # the body is a single block: nothing older to summarise
            return self._account(fit_messages(virtual, budget, size, policy, pinned), start - head_end)

        span, _ = _render(virtual, plan, policy, span_start, cut)
        self.calls += 1
        text = self.summarize(tuple(span))
        if not isinstance(text, str) or not text.strip():
            return self._account(fit_messages(virtual, budget, size, policy, pinned), start - head_end)

        end = start + (cut - lay.head_end)  # the cut, as an index into the real history
        self._summary = Message("user", f"{policy.summary_header}\n\n{text.strip()}", meta={"summary": True})
        self._end, self._anchor, self._first = end, msgs[end - 1], msgs[head_end - 1]
        virtual, pinned, start = self._virtual(msgs, head_end)
        return self._account(fit_messages(virtual, budget, size, policy, pinned), start - head_end)

    def _account(self, result: FitResult, summarized: int) -> FitResult:
        if not summarized:
            return result
        return replace(result, dropped=result.dropped + summarized, summarized=summarized)
