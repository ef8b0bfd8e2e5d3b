"""Tools the harness offers the model, and the shell tool: commands in the sandbox, several at
once, each with a timeout, its output capped to head and tail, and each approved before it runs.

A tool is a unique name, a description, a JSON Schema for its parameters and a procedure. The
model only proposes calls; ``ToolBox.call`` decides: an unknown name, arguments that are not
JSON, or arguments that fail the schema are answered with an error result and nothing runs.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import jsonschema

from skillctl.errors import ConfigError
from skillctl.messages import ToolCall
from skillctl.protocols import ExecResult, Sandbox, ToolSpec
from skillctl.runtime.deadline import Deadline
from skillctl.runtime.output_budget import OutputBudget
from skillctl.runtime.stops import Cancelled
from skillctl.schema import schema_problems, summarize, validator
from skillctl.sandbox.output import format_result

DEFAULT_TIMEOUT_MS = 60_000
# The most a command may be given: what a model may ask for, and the bound on --timeout-ms.
MAX_TIMEOUT_MS = 3_600_000
DEFAULT_MAX_OUTPUT = 10_000  # characters of one command's result the model reads (head + tail)
MAX_COMMANDS_PER_CALL = 8
REJECTED = "rejected by the user"
AT_DEADLINE = "note: the run's time budget (max_seconds) ended during this command"
NOT_STARTED = "not run: the run's time budget (max_seconds) ended before it could start"


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call produced: the text for the model, and full details for the transcript."""

    text: str
    ok: bool = True  # False for invalid calls (unknown tool, bad arguments)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    procedure: Callable[[dict[str, Any]], ToolOutcome]

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)


class ToolBox:
    def __init__(self, tools: Sequence[Tool]) -> None:
        names = [t.name for t in tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"tool names must be unique; duplicated: {', '.join(dupes)}")
        self.tools = {t.name: t for t in tools}
        self._validators = {}
        for t in tools:
            cls = jsonschema.validators.validator_for(t.parameters)
            cls.check_schema(t.parameters)
            self._validators[t.name] = cls(t.parameters)

    @property
    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self.tools.values()]

    def call(self, call: ToolCall) -> ToolOutcome:
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools))
            return ToolOutcome(f"error: unknown tool '{call.name}'; available tools: {known}. Nothing was run.", ok=False)
        try:
            args = call.parsed_arguments()
        except ValueError as exc:
            return ToolOutcome(f"error: arguments of {call.name} are not valid JSON ({exc}). Nothing was run.", ok=False)
        # jsonschema's own sentences: the model reads them, and knows them in that form
        errors = schema_problems(args, self._validators[call.name], wording=validator, top="arguments")
        if errors:
            return ToolOutcome(f"error: invalid arguments for {call.name}: {summarize(errors)}. Nothing was run.", ok=False)
        return tool.procedure(args)


# ----------------------------------------------------------------------------- the shell tool

SHELL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "commands": {
            "type": "array",
            "description": "Shell commands to run; several run concurrently, each in its own session.",
            "items": {"type": "string", "minLength": 1, "maxLength": 100_000},
            "minItems": 1,
            "maxItems": MAX_COMMANDS_PER_CALL,
        },
        "timeout_ms": {"type": "integer", "minimum": 100, "maximum": MAX_TIMEOUT_MS, "description": "Per-command timeout (the harness may set a lower maximum)."},
        "max_output_length": {"type": "integer", "minimum": 256, "maximum": 200_000, "description": "Characters of output to return per command (head and tail are kept)."},
    },
    "required": ["commands"],
    "additionalProperties": False,
}

SHELL_DESCRIPTION = (
    "Run shell commands (sh) in the sandbox: an isolated Linux container without network. "
    "The working folder is {workspace} (writable); skills are under {skills} (read-only). "
    "Each command starts fresh in {workspace} (no state carries over except files). "
    "Commands given together run concurrently. Each result shows the exit code, then stdout and "
    "stderr; long output keeps its beginning and end. Prefer commands that print little "
    "(grep, head, wc, sqlite3 queries) over printing whole files."
)


def _interruptible(fn: Callable[[], Any], cancel: threading.Event | None = None) -> Any:
    """``fn()``, run on a daemon thread while this one waits for it — or until ``cancel`` is set.

    Why: a backend that runs commands on a thread pool waits for them when interrupted (the
    pool's shutdown joins its workers), so Ctrl-C reached the loop only when every command had
    finished or timed out — minutes later. Waiting here instead lets ``KeyboardInterrupt`` (or
    ``Cancelled``, from another thread) through at once; the commands still running end when the
    caller stops the sandbox (``skillctl.runtime.run`` does so in its ``with`` block), and their
    late results are discarded.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised on the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="shell-tool", daemon=True)
    worker.start()
    if cancel is None:
        worker.join()  # interruptible: a signal's exception is raised here
    while worker.is_alive():
        if cancel is not None and cancel.wait(0.1):
            raise Cancelled("the run was cancelled while commands were running")
        worker.join(0.01)
    if "error" in box:
        raise box["error"]
    return box["value"]


def shell_tool(
    sandbox: Sandbox,
    *,
    approve: Callable[[str], tuple[bool, str]] | None = None,
    default_timeout_ms: int = DEFAULT_TIMEOUT_MS,
    max_timeout_ms: int | None = None,
    default_max_output: int = DEFAULT_MAX_OUTPUT,
    on_result: Callable[[str, ExecResult | None, str], None] | None = None,
    cancel: threading.Event | None = None,
    output_budget: OutputBudget | None = None,
    deadline: Deadline | None = None,
) -> Tool:
    """The shell tool over ``sandbox``. ``approve(command)`` → (allowed, reason) decides
    whether a command runs (a person's approval, or a policy's). Its
    description names the sandbox's own paths (``workspace``, ``skills_root``).

    A command's timeout is the least of what the model asked (``timeout_ms``, else
    ``default_timeout_ms``), ``max_timeout_ms``, and the time left before ``deadline`` (the run's
    ``max_seconds``, shared with sub-agents): a command cut at the deadline says so, and the loop
    then ends the run as ``time_exhausted``.

    The details for the transcript carry each command's captured output, cut to fit
    ``output_budget`` (per call and per run; see ``output_budget``): one budget per tool, so
    sub-agents sharing this tool share the run's budget.
    """
    budget = output_budget if output_budget is not None else OutputBudget()

    def run(args: dict[str, Any]) -> ToolOutcome:
        commands: list[str] = args["commands"]
        timeout_ms = args.get("timeout_ms", default_timeout_ms)
        if max_timeout_ms is not None:
            timeout_ms = min(timeout_ms, max_timeout_ms)
        timeout_s, at_deadline = deadline.cap(timeout_ms / 1000.0) if deadline is not None else (timeout_ms / 1000.0, False)
        if timeout_s <= 0:  # the run's time ran out between the loop's check and here: nothing starts
            records = [{"command": c, "approved": False, "reason": NOT_STARTED} for c in commands]
            return ToolOutcome("\n\n".join(f"$ {c}\n{NOT_STARTED}" for c in commands),
                               details={"output": records, "elapsed_s": 0.0})
        limit = args.get("max_output_length", default_max_output)
        verdicts = [approve(c) if approve else (True, "no approval policy") for c in commands]
        allowed = [c for c, (ok, _) in zip(commands, verdicts) if ok]
        started = time.monotonic()
        # A SandboxError is not caught here: it means the sandbox itself is unusable (container
        # gone, daemon failing after retries, host deadline passed), which no later command can
        # fix, so it ends the run as ``sandbox_error`` instead of being fed to the model turn
        # after turn. A command that fails or times out is a result, not an exception.
        results = iter(_interruptible(lambda: sandbox.exec_many(allowed, timeout_s=timeout_s), cancel) if allowed else [])
        elapsed = time.monotonic() - started
        parts: list[str] = []
        records: list[dict[str, Any]] = []
        for cmd, (ok, reason) in zip(commands, verdicts):
            if not ok:
                parts.append(f"$ {cmd}\n{REJECTED}: the command was not run ({reason})")
                records.append({"command": cmd, "approved": False, "reason": reason})
                if on_result:
                    on_result(cmd, None, reason)
                continue
            res = next(results)
            stopped_at_deadline = at_deadline and res.outcome_type == "timeout"
            text = format_result(res, limit)
            parts.append(f"$ {cmd}\n{AT_DEADLINE}\n{text}" if stopped_at_deadline else f"$ {cmd}\n{text}")
            records.append({"command": cmd, "approved": True, "reason": reason, **res.to_dict(),
                            "duration_s": round(res.duration_s, 4), "timeout_s": round(timeout_s, 3),
                            "stdout_dropped": res.stdout_dropped, "stderr_dropped": res.stderr_dropped,
                            **({"stopped_at_run_deadline": True} if stopped_at_deadline else {})})
            if on_result:
                on_result(cmd, res, reason)
        _fit_to_budget(records, budget)
        return ToolOutcome("\n\n".join(parts), details={"output": records, "elapsed_s": round(elapsed, 4)})

    description = SHELL_DESCRIPTION.format(workspace=sandbox.workspace, skills=sandbox.skills_root)
    return Tool("shell", description, SHELL_SCHEMA, run)


def _fit_to_budget(records: list[dict[str, Any]], budget: OutputBudget) -> None:
    """Cut the output kept in ``records`` to what ``budget`` allows; count what was left out."""
    places = [(r, key) for r in records if r.get("approved") for key in ("stdout", "stderr")]
    for (record, key), (text, omitted) in zip(places, budget.fit([r[key] for r, key in places])):
        record[key] = text
        if omitted:
            record[f"{key}_not_in_transcript"] = omitted


def tool_spec_tokens(specs: Sequence[ToolSpec]) -> int:
    """Estimated tokens the tool definitions add to every request."""
    from skillctl.tokens import estimate_tokens

    return sum(estimate_tokens(s.name) + estimate_tokens(s.description) + estimate_tokens(json.dumps(s.parameters)) for s in specs)
