"""Builders for the loop tests: script files on disk, a model wrapper that keeps what each
request carried, and small real tools that isolate one clause of the loop."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

import yaml

from skillctl.messages import Message
from skillctl.models.script import ScriptModel
from skillctl.protocols import Model, ModelReply, ToolSpec
from skillctl.runtime.tools import Tool, ToolOutcome


def write_script(folder: Path, steps: list[dict[str, Any]], name: str = "run.script.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({"steps": steps}, sort_keys=False, allow_unicode=True), "utf-8")
    return path


def script_model(folder: Path, steps: list[dict[str, Any]]) -> "Recording":
    return Recording(ScriptModel(write_script(folder, steps)))


class Recording:
    """Passes every request to ``inner`` and keeps what was sent (as message dicts) and the
    tools offered: what the model received, to compare with the transcript."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.sent: list[list[dict[str, Any]]] = []
        self.tools: list[list[ToolSpec]] = []

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply:
        self.sent.append([m.to_dict() for m in messages])
        self.tools.append(list(tools))
        return self.inner.complete(messages, tools)


class NoteTool:
    """A tool that only records its calls: proof of what ran and what did not."""

    SCHEMA = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "repeat": {"type": "integer", "minimum": 1}},
        "required": ["text"],
        "additionalProperties": False,
    }

    def __init__(self, name: str = "note", *, result_size: int | None = None, sleep_s: float = 0.0) -> None:
        self.calls: list[dict[str, Any]] = []
        self.result_size = result_size
        self.sleep_s = sleep_s
        self.tool = Tool(name, f"Records a note ({name}).", self.SCHEMA, self._run)

    def _run(self, args: dict[str, Any]) -> ToolOutcome:
        self.calls.append(args)
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.result_size is not None:
            # Constant size whatever the call: the context grows by exactly the same per step.
            return ToolOutcome("r" * self.result_size, details={"n": len(self.calls)})
        return ToolOutcome(f"noted: {args['text'] * args.get('repeat', 1)}", details={"n": len(self.calls)})


def note(text: str = "x", **extra: Any) -> dict[str, Any]:
    """A script step calling the note tool."""
    return {"tool": "note", "arguments": {"text": text, **extra}}
