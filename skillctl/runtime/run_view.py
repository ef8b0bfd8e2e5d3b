"""One past run read back from its transcript, step by step: ``read_run(path) -> RunView``.

Per step (model call k): the tokens sent (c_k) and reported back, how long the model took, what
the model said, and each tool call — for the shell, every command with its exit code (or
timeout, or the approval's refusal) and time; for a sub-agent, its outcome, steps and tokens,
and its own transcript. Then how the run ended (``run_end``: outcome, answer, what was loaded,
checks, outputs, warnings), errors, and how many egress requests went out or were denied.

Command output is not kept: it can be large, and the transcript has it. A transcript still being
written (or cut by a crash) reads as far as it goes; a line that is not JSON is counted, not
fatal — a transcript is evidence, and a damaged one should still show what it can.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skillctl.errors import TranscriptError
from skillctl.nesting import loads_json

from .runs import UNFINISHED, is_transcript


@dataclass
class CommandView:
    command: str
    exit_code: int | None  # None: it timed out or did not run
    status: str  # "exit 0", "timeout", "rejected: why", "not run: why"
    duration_s: float | None


@dataclass
class CallView:
    tool: str
    arguments: str
    valid: bool = True
    commands: list[CommandView] = field(default_factory=list)
    subagent: dict[str, Any] | None = None  # number, outcome, steps, tokens, transcript
    result: str = ""  # the result's text, for tools other than the shell (first line only)


@dataclass
class StepView:
    number: int
    tokens_sent: int | None = None  # c_k
    input_tokens: int | None = None  # as the API reported them
    output_tokens: int | None = None
    seconds: float | None = None
    text: str = ""  # what the model said
    calls: list[CallView] = field(default_factory=list)


@dataclass
class RunView:
    path: Path
    model: str = ""
    started: float | None = None
    task: str = ""
    tools: list[str] = field(default_factory=list)
    steps: list[StepView] = field(default_factory=list)
    end: dict[str, Any] | None = None  # the run_end event (the RunResult), None while unfinished
    errors: list[dict[str, Any]] = field(default_factory=list)
    egress: dict[str, int] = field(default_factory=dict)  # decision -> count
    unreadable_lines: int = 0

    @property
    def outcome(self) -> str:
        return str(self.end.get("outcome")) if self.end else UNFINISHED

    @property
    def tokens(self) -> int:
        """Total tokens sent: the sum of the context sizes of every model call."""
        return sum(s.tokens_sent or 0 for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        end = self.end or {}
        return {
            "transcript": str(self.path), "model": self.model, "started": self.started, "task": self.task,
            "tools": self.tools, "outcome": self.outcome, "exit_code": end.get("exit_code"),
            "answer": end.get("answer"), "message": end.get("message", ""), "duration_s": end.get("duration_s"),
            "tokens": {"total": self.tokens, "per_step": [s.tokens_sent for s in self.steps],
                       "output": sum(s.output_tokens or 0 for s in self.steps)},
            "skills": end.get("skills", []), "memory": end.get("memory"), "checks": end.get("checks", []),
            "outputs": end.get("outputs", []), "warnings": end.get("warnings", []),
            "steps": [asdict(s) for s in self.steps], "errors": self.errors, "egress": self.egress,
            "unreadable_lines": self.unreadable_lines,
        }


def _command(record: dict[str, Any]) -> CommandView:
    command = str(record.get("command", ""))
    if not record.get("approved", True):
        reason = str(record.get("reason", ""))
        word = "not run" if "not started" in reason or "not run" in reason else "rejected"
        return CommandView(command, None, f"{word}: {reason}", None)
    outcome = record.get("outcome") or {}
    code = outcome.get("exit_code") if outcome.get("type") == "exit" else None
    status = f"exit {code}" if outcome.get("type") == "exit" else str(outcome.get("type", "?"))
    return CommandView(command, code, status, record.get("duration_s"))


def _subagent(details: dict[str, Any]) -> dict[str, Any]:
    return {"number": details.get("subagent"), "outcome": details.get("outcome"), "steps": details.get("steps"),
            "tokens": sum(details.get("context_sizes") or []), "duration_s": details.get("duration_s"),
            "transcript": details.get("transcript")}


class _Reader:
    def __init__(self, view: RunView) -> None:
        self.view = view
        self.calls: dict[str, CallView] = {}  # by tool call id, until its result comes

    def step(self, number: int) -> StepView:
        while len(self.view.steps) < number:
            self.view.steps.append(StepView(len(self.view.steps) + 1))
        return self.view.steps[number - 1]

    def event(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        view = self.view
        if kind == "run_start":
            view.model, view.started, view.tools = str(ev.get("model", "")), ev.get("time"), list(ev.get("tools") or [])
        elif kind == "reply":
            step = self.step(int(ev.get("step", len(view.steps) + 1)))
            step.tokens_sent, step.seconds = ev.get("c_k"), ev.get("seconds")
            step.input_tokens, step.output_tokens = ev.get("input_tokens"), ev.get("output_tokens")
        elif kind == "message":
            self.message(ev)
        elif kind == "run_end":
            view.end = {k: v for k, v in ev.items() if k not in ("type", "time")}
        elif kind == "error":
            view.errors.append({"kind": ev.get("kind"), "detail": ev.get("detail")})
        elif str(kind).startswith("egress"):  # a proxied request ("decision"), or a proxy's error
            decision = str(ev.get("decision") or kind)
            view.egress[decision] = view.egress.get(decision, 0) + 1

    def message(self, ev: dict[str, Any]) -> None:
        m = ev.get("message") or {}
        role = m.get("role")
        if role == "user" and not self.view.task:
            self.view.task = str(m.get("content", ""))
        elif role == "assistant" and self.view.steps:
            step = self.view.steps[-1]
            step.text = str(m.get("content") or "")
            for call in m.get("tool_calls") or []:
                view = CallView(str(call.get("name", "")), str(call.get("arguments", "")))
                step.calls.append(view)
                self.calls[str(call.get("id"))] = view
        elif role == "tool":
            call = self.calls.pop(str(m.get("tool_call_id")), None)
            if call is None:
                return
            details = ev.get("details") or {}
            call.valid = bool(ev.get("valid", True))
            if isinstance(details.get("output"), list):
                call.commands = [_command(r) for r in details["output"] if isinstance(r, dict)]
            elif "subagent" in details:
                call.subagent = _subagent(details)
            if not call.commands:
                call.result = str(m.get("content", "")).strip().split("\n", 1)[0][:300]


def read_run(path: Path) -> RunView:
    """The run ``path`` records; ``TranscriptError`` when it is not a transcript."""
    if not path.is_file():
        raise TranscriptError(f"no transcript file {path}; see: skillctl runs list")
    if not is_transcript(path):
        raise TranscriptError(f"{path} is not a skillctl transcript (its first event is not run_start)")
    view = RunView(path)
    reader = _Reader(view)
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                ev = loads_json(line)
            except ValueError:
                view.unreadable_lines += 1
                continue
            if isinstance(ev, dict):
                reader.event(ev)
            else:
                view.unreadable_lines += 1
    return view
