"""``openai-chat:MODEL`` — Chat Completions (``POST /v1/chat/completions``) through the official
SDK. The protocol every local server speaks, so with ``--base-url`` the same code talks to
OpenAI, vLLM, Ollama (``http://127.0.0.1:11434/v1``) or a llama.cpp server.

Our ``Message`` already has the Chat shape; only tool calls change form
(``{id, type: "function", function: {name, arguments}}``), and an assistant turn that only
calls tools is sent with ``content: null`` as the API documents.
"""

from __future__ import annotations

from typing import Any, Sequence

from skillctl.errors import ModelError
from skillctl.messages import Message, ToolCall
from skillctl.models.openai_api import Endpoint, make_client, require_api_object, translated_errors, usage_tokens
from skillctl.protocols import ModelReply, ToolSpec


def to_chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our history as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append({
                "role": "assistant",
                "content": m.content or None,
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in m.tool_calls
                ],
            })
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def reply_from_completion(completion: Any, *, call_prefix: str = "call") -> ModelReply:
    """Text, calls and usage of the first choice. Some local servers omit tool call ids; those
    get ``{call_prefix}_{i}`` so every result can still name the call it answers."""
    if not completion.choices:
        raise ValueError("the reply has no choices")
    message = completion.choices[0].message
    calls: list[ToolCall] = []
    for i, tc in enumerate(message.tool_calls or (), start=1):
        fn = getattr(tc, "function", None)
        if fn is None:  # a custom (non-function) tool call: we never offer those
            continue
        calls.append(ToolCall(tc.id or f"{call_prefix}_{i}", fn.name, fn.arguments or ""))
    usage = getattr(completion, "usage", None)
    return ModelReply(
        content=message.content or "",
        tool_calls=tuple(calls),
        input_tokens=usage_tokens(getattr(usage, "prompt_tokens", None)),
        output_tokens=usage_tokens(getattr(usage, "completion_tokens", None)),
        raw=completion.model_dump(mode="json", exclude_none=True),
    )


class ChatModel:
    """A ``Model`` over Chat Completions."""

    def __init__(self, model: str, endpoint: Endpoint) -> None:
        self.model = model
        self.name = f"openai-chat:{model}"
        self.endpoint = endpoint
        self._client = make_client(endpoint)
        self._calls = 0

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for this history."""
        body: dict[str, Any] = {"model": self.model, "messages": to_chat_messages(messages)}
        if tools:
            body["tools"] = to_tools(tools)
        return body

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply:
        body = self.request_body(messages, tools)
        with translated_errors(self.endpoint, self.model):
            completion = self._client.chat.completions.create(**body)
        require_api_object(completion, self.endpoint, self.model)
        self._calls += 1
        try:
            return reply_from_completion(completion, call_prefix=f"call_{self._calls}")
        except ValueError as exc:
            raise ModelError(f"model endpoint {self.endpoint.display} sent an unusable reply for model {self.model!r}: {exc}") from None

    def close(self) -> None:
        self._client.close()
