"""Keeping long runs inside the context window: what is sent fits a token budget, the saved
history keeps everything, and the model is told how old results disappear.

The agent loop calls ``fit(history, budget)`` before every model request and sends
``FitResult.messages``; the history itself is never changed. ``CLEARING_NOTICE`` goes into the
system prompt. ``PrefixReuse`` measures how cache-friendly the requests were, for the run
summary. ``Compactor`` is the optional summarising variant, off unless the loop builds one.

Module map: ``structure`` (head, blocks, rounds, turns), ``policy`` (knobs), ``sizing`` (token
counts), ``fitting`` (the three passes), ``prefix`` (cache figure), ``compaction`` (summaries),
``notices`` (every text the model sees).
"""

from skillctl.context.compaction import Compactor
from skillctl.context.fitting import FitResult, fit
from skillctl.context.notices import (
    CLEARED_NOTE,
    CLEARING_NOTICE,
    ROUNDS_CUT_NOTE,
    SUMMARY_HEADER,
    TURNS_CUT_NOTE,
)
from skillctl.context.policy import DEFAULT_POLICY, FitPolicy
from skillctl.context.prefix import PrefixReuse
from skillctl.context.sizing import MessageSizer

__all__ = [
    "CLEARED_NOTE",
    "CLEARING_NOTICE",
    "Compactor",
    "DEFAULT_POLICY",
    "FitPolicy",
    "FitResult",
    "MessageSizer",
    "PrefixReuse",
    "ROUNDS_CUT_NOTE",
    "SUMMARY_HEADER",
    "TURNS_CUT_NOTE",
    "fit",
]
