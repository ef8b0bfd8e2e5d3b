"""How cache-friendly a run's requests were: the prompt-cache figure of the run summary.

Model providers cache the longest prefix a request shares with an earlier one. A request can be
served from that cache up to the end of the previous request only when the previous request is,
message for message, a prefix of it — i.e. fitting changed nothing that was already sent and only
appended new messages. ``PrefixReuse`` counts how often that held between consecutive requests;
clearing in batches exists to keep that figure high.
"""

from __future__ import annotations

from typing import Any, Sequence

from skillctl.messages import Message


def common_prefix_len(a: Sequence[Message], b: Sequence[Message]) -> int:
    """Number of leading messages ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    for i in range(n):
        x, y = a[i], b[i]
        # Identity first: fitted requests reuse message objects, so this is usually enough.
        if x is not y and x != y:
            return i
    return n


class PrefixReuse:
    """Tracks consecutive requests of one run; call ``observe`` with each request's messages.

    ``ratio``        requests that began with the whole previous request, over requests that had
                     a previous one (1.0 while there is nothing to compare).
    ``token_ratio``  tokens of the prefix shared with the previous request, over tokens sent
                     after the first request: roughly the part a prompt cache could serve.
    """

    def __init__(self) -> None:
        self._previous: tuple[Message, ...] | None = None
        self.requests = 0
        self.reused = 0  # requests that extended the previous one
        self.shared_tokens = 0
        self.compared_tokens = 0

    def observe(self, messages: Sequence[Message]) -> bool:
        """Record one request; True when it begins with the whole previous request."""
        current = tuple(messages)
        self.requests += 1
        hit = False
        if self._previous is not None:
            k = common_prefix_len(self._previous, current)
            hit = k == len(self._previous)
            self.reused += hit
            self.shared_tokens += sum(m.tokens for m in current[:k])
            self.compared_tokens += sum(m.tokens for m in current)
        self._previous = current
        return hit

    @property
    def compared(self) -> int:
        return max(self.requests - 1, 0)

    @property
    def ratio(self) -> float:
        return self.reused / self.compared if self.compared else 1.0

    @property
    def token_ratio(self) -> float:
        return self.shared_tokens / self.compared_tokens if self.compared_tokens else 1.0

    def to_dict(self) -> dict[str, Any]:
        """The figures for the run summary."""
        return {
            "requests": self.requests,
            "prefix_reused": self.reused,
            "prefix_reuse": round(self.ratio, 4),
            "prefix_token_reuse": round(self.token_ratio, 4),
        }
