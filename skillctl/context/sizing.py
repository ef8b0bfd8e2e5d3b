"""Message sizes for fitting: the memoised per-script estimate, or a real tokenizer if given.

``Message.tokens`` already memoises the per-script estimate on the message itself. A real
tokenizer is slower than the estimate, so its counts are memoised too, per ``MessageSizer``:
pass the same sizer (or the same tokenizer object) on every call of a run and each message is
counted once.
"""

from __future__ import annotations

import weakref
from operator import attrgetter
from typing import Callable

from skillctl.errors import ConfigError
from skillctl.messages import MESSAGE_OVERHEAD_TOKENS, TOOL_CALL_OVERHEAD_TOKENS, Message
from skillctl.tokens import EstimateTokenizer, Tokenizer

Size = Callable[[Message], int]

# The default path: the estimate memoised on each (immutable) message.
estimate_size: Size = attrgetter("tokens")


class MessageSizer:
    """Counts a message's tokens with ``tokenizer``, once per message.

    The same framing overheads as ``Message.tokens`` are added, so budgets mean the same thing
    whichever way messages are counted.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        if not callable(getattr(tokenizer, "count", None)):
            raise ConfigError(
                f"tokenizer {type(tokenizer).__name__} has no count(text) method; "
                "pass an object with count(text) -> int, or None for the built-in estimate"
            )
        self.tokenizer = tokenizer
        # Weak keys: the memo never keeps a message alive after the history lets it go.
        self._memo: weakref.WeakKeyDictionary[Message, int] = weakref.WeakKeyDictionary()

    def __call__(self, message: Message) -> int:
        try:
            return self._memo[message]
        except KeyError:
            pass
        count = self.tokenizer.count
        n = MESSAGE_OVERHEAD_TOKENS + count(message.content)
        for call in message.tool_calls:
            n += TOOL_CALL_OVERHEAD_TOKENS + count(call.name) + count(call.arguments)
        self._memo[message] = n
        return n


# One sizer per tokenizer object, so callers that pass the same tokenizer on every call get the
# memo without having to hold a MessageSizer themselves.
_SIZERS: "weakref.WeakKeyDictionary[object, MessageSizer]" = weakref.WeakKeyDictionary()


def sizer_for(tokenizer: Tokenizer | MessageSizer | None) -> Size:
    """The size function ``fit`` uses for ``tokenizer`` (``None``: the memoised estimate)."""
    if tokenizer is None or type(tokenizer) is EstimateTokenizer:
        return estimate_size
    if isinstance(tokenizer, MessageSizer):
        return tokenizer
    try:
        sizer = _SIZERS.get(tokenizer)
    except TypeError:  # unhashable or not weak-referenceable: no memo across calls
        return MessageSizer(tokenizer)
    if sizer is None:
        sizer = MessageSizer(tokenizer)
        try:
            _SIZERS[tokenizer] = sizer
        except TypeError:
            pass
    return sizer
