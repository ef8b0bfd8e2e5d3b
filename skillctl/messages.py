"""The conversation as plain, immutable data.

A history is a list of ``Message``s in the Chat Completions shape (system / user / assistant with
tool calls / tool results). Messages never change once written, so each one computes its token
estimate once (``skillctl.tokens``) and keeps it. Context fitting builds *new* lists of messages
to send; it never edits a message in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from skillctl.nesting import loads_json
from skillctl.tokens import estimate_tokens

Role = Literal["system", "user", "assistant", "tool"]

# Fixed overhead per message (role, separators) and per tool call (id, name, JSON framing), so
# that many tiny messages are not estimated as free.
MESSAGE_OVERHEAD_TOKENS = 4
TOOL_CALL_OVERHEAD_TOKENS = 8


@dataclass(frozen=True)
class ToolCall:
    """One call the model proposed. ``arguments`` is the raw JSON text the model wrote: it may be
    invalid, and the harness (not the model) decides what to do with it."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments as JSON; raises ``ValueError`` when the model wrote invalid JSON."""
        return loads_json(self.arguments or "{}")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # set on role="tool": the call this result answers
    name: str | None = None  # tool name on role="tool"
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @cached_property
    def tokens(self) -> int:
        """Estimated tokens of this message, computed once (messages are immutable)."""
        n = MESSAGE_OVERHEAD_TOKENS + estimate_tokens(self.content)
        for call in self.tool_calls:
            n += TOOL_CALL_OVERHEAD_TOKENS + estimate_tokens(call.name) + estimate_tokens(call.arguments)
        return n

    def with_content(self, content: str) -> "Message":
        """A copy with other content (used to send a cleared tool result; the original stays)."""
        return Message(self.role, content, self.tool_calls, self.tool_call_id, self.name, dict(self.meta))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Message":
        return cls(
            role=d["role"],
            content=d.get("content") or "",
            tool_calls=tuple(ToolCall(c["id"], c["name"], c.get("arguments", "{}")) for c in d.get("tool_calls", ())),
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
        )


def system(text: str) -> Message:
    return Message("system", text)


def user(text: str) -> Message:
    return Message("user", text)


def assistant(text: str = "", tool_calls: tuple[ToolCall, ...] = ()) -> Message:
    return Message("assistant", text, tuple(tool_calls))


def tool_result(call: ToolCall, text: str) -> Message:
    return Message("tool", text, tool_call_id=call.id, name=call.name)
