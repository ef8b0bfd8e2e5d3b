"""A ``summarize(messages) -> str`` backed by the run's own model, for summarising compaction."""

from __future__ import annotations

from typing import Callable, Sequence

from skillctl.messages import Message, system, user
from skillctl.protocols import Model

INSTRUCTIONS = (
    "You compress the early part of an agent's working session so the agent can continue without "
    "it. Write a concise summary: the task, what was tried, commands that matter and their "
    "results (exit codes, file paths, numbers), decisions made, and what remains to do. Keep "
    "facts exact; leave out tool output that is no longer needed. Plain text, no preamble."
)
MAX_TRANSCRIPT_CHARS = 200_000


def render(messages: Sequence[Message]) -> str:
    parts = []
    for m in messages:
        if m.role == "tool":
            parts.append(f"[result of {m.name or 'tool'}]\n{m.content}")
        elif m.tool_calls:
            calls = "; ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
            parts.append(f"[{m.role}] {m.content}\n[calls] {calls}".strip())
        else:
            parts.append(f"[{m.role}] {m.content}")
    text = "\n\n".join(parts)
    return text if len(text) <= MAX_TRANSCRIPT_CHARS else text[-MAX_TRANSCRIPT_CHARS:]


def model_summarizer(model: Model) -> Callable[[Sequence[Message]], str]:
    def summarize(messages: Sequence[Message]) -> str:
        reply = model.complete([system(INSTRUCTIONS), user(render(messages))], [])
        return reply.content.strip()

    return summarize
