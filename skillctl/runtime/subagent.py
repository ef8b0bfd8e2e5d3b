"""Sub-agents: another agent run, started as a tool, with its own fresh context.

The parent's model calls ``subagent`` with a task; the harness starts a new ``Agent`` on the same
model and sandbox whose c₁ is the same system prompt plus that task — none of the parent's
history. Only the child's final answer comes back as the tool result, so a long exploration
costs the parent one short message instead of every step's output (the cost Z grows with the
square of the steps, so moving them into a child keeps the parent's context small). Children cannot
start children (depth 1), which bounds the cost of a model that keeps delegating.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from skillctl.protocols import Model
from skillctl.runtime.deadline import Deadline
from skillctl.runtime.loop import Agent, Limits
from skillctl.runtime.tools import Tool, ToolBox, ToolOutcome
from skillctl.runtime.transcript import Transcript

SUBAGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "minLength": 1,
            "maxLength": 20_000,
            "description": "The whole task for the sub-agent: it sees nothing of this conversation.",
        }
    },
    "required": ["task"],
    "additionalProperties": False,
}

SUBAGENT_DESCRIPTION = (
    "Start a sub-agent with a fresh context on a self-contained task (e.g. 'find which file "
    "defines X and report its path'). It has the same shell and skills but none of this "
    "conversation; only its final answer comes back. Use it for exploration whose intermediate "
    "output you do not need to keep."
)


def subagent_tool(
    model: Model,
    system_text: str,
    child_tools: Sequence[Tool],
    *,
    limits: Limits = Limits(),
    transcript_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
    deadline: Deadline | None = None,
) -> Tool:
    """The ``subagent`` tool. ``child_tools`` must not include a subagent tool (depth 1);
    ``cancel`` stops the child as it stops the parent; ``deadline``, the parent's, ends the child
    when the run's time ends (without it a child would get a whole ``max_seconds`` of its own)."""
    if any(t.name == "subagent" for t in child_tools):
        raise ValueError("sub-agents cannot start sub-agents: leave the subagent tool out of child_tools")
    counter = {"n": 0}
    say = progress or (lambda _m: None)

    def run(args: dict[str, Any]) -> ToolOutcome:
        counter["n"] += 1
        n = counter["n"]
        path = transcript_dir / f"subagent-{n}.jsonl" if transcript_dir is not None else None
        child = Agent(
            model, ToolBox(list(child_tools)), limits=limits, transcript=Transcript(path),
            progress=lambda m: say(f"  [sub-agent {n}] {m}"), cancel=cancel, deadline=deadline,
        )
        result = child.run(system_text, args["task"])
        details = {"subagent": n, **result.to_dict()}
        if result.outcome == "answered" and result.answer is not None:
            return ToolOutcome(result.answer, details=details)
        return ToolOutcome(
            f"the sub-agent ended without an answer ({result.outcome}: {result.message or 'no details'})",
            details=details,
        )

    return Tool("subagent", SUBAGENT_DESCRIPTION, SUBAGENT_SCHEMA, run)
