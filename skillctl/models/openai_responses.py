"""``openai:MODEL`` — the Responses API (``POST /v1/responses``) through the official SDK.

The whole history is sent on every call with ``store=False``: the harness owns the transcript
and the context fitting (it fits what is sent and keeps the whole history), so nothing is kept
server-side between calls.

History mapping (our Chat-shaped ``Message`` → Responses input items):

    system / user           {"role": ..., "content": text}
    assistant               {"role": "assistant", "content": text}   (when it has text)
                            + one {"type": "function_call", call_id, name, arguments} per call
    tool                    {"type": "function_call_output", call_id, output}
"""

from __future__ import annotations

from typing import Any, Sequence

from skillctl.messages import Message, ToolCall
from skillctl.models.openai_api import (
    Endpoint,
    failed_response_error,
    make_client,
    require_api_object,
    translated_errors,
    usage_tokens,
)
from skillctl.protocols import ModelReply, ToolSpec


def to_input_items(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our history as Responses input items (see the module docstring)."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id or "", "output": m.content})
            continue
        if m.role != "assistant" or m.content or not m.tool_calls:
            items.append({"role": m.role, "content": m.content})
        for call in m.tool_calls:
            items.append({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments})
    return items


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # strict=False: the harness validates arguments against the schema itself (a call that fails
    # is not run), and strict mode would reject ordinary schemas (optional properties, no
    # additionalProperties).
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
        for t in tools
    ]


def reply_from_response(response: Any) -> tuple[ModelReply, tuple[str | None, str] | None]:
    """Text, calls and usage of a Responses object; the second item is ``(code, message)``
    when the response says generation failed."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in response.output or ():
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in item.content or ():
                if getattr(part, "type", None) == "output_text" and part.text:
                    texts.append(part.text)
        elif kind == "function_call":
            calls.append(ToolCall(item.call_id, item.name, item.arguments or ""))
        # Reasoning and other item kinds are kept in ``raw`` only.
    usage = getattr(response, "usage", None)
    reply = ModelReply(
        content="".join(texts),
        tool_calls=tuple(calls),
        input_tokens=usage_tokens(getattr(usage, "input_tokens", None)),
        output_tokens=usage_tokens(getattr(usage, "output_tokens", None)),
        raw=response.model_dump(mode="json", exclude_none=True),
    )
    failure = None
    if getattr(response, "status", None) == "failed":
        err = getattr(response, "error", None)
        failure = (getattr(err, "code", None), getattr(err, "message", "") or "the response has status 'failed'")
    return reply, failure


class ResponsesModel:
    """A ``Model`` over the Responses API."""

    def __init__(self, model: str, endpoint: Endpoint) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.endpoint = endpoint
        self._client = make_client(endpoint)

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The keyword arguments of ``responses.create`` for this history."""
        body: dict[str, Any] = {"model": self.model, "input": to_input_items(messages), "store": False}
        if tools:
            body["tools"] = to_tools(tools)
        return body

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply:
        body = self.request_body(messages, tools)
        with translated_errors(self.endpoint, self.model):
            response = self._client.responses.create(**body)
        require_api_object(response, self.endpoint, self.model)
        reply, failure = reply_from_response(response)
        if failure is not None:
            raise failed_response_error(self.endpoint, self.model, *failure)
        return reply

    def close(self) -> None:
        self._client.close()
