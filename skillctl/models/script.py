"""The scripted model: replays a written agent run from a YAML file (model spec ``script:FILE``).

Each ``complete()`` returns the next step of the file, whatever the conversation says, so a run
is deterministic: the demo and the loop's tests use it, and so can anyone who wants to replay a
run by hand against real tools. The file is validated against ``script.schema.json`` (shipped
beside this module) when the model is opened, so a typo fails before any container starts::

    steps:
      - shell: ["ls /skills", "cat /skills/tally/SKILL.md"]   # one shell call, two commands
        say: "Let me look at the skills."                      # optional text with the call
      - tool: shell                                            # any tool call, raw arguments
        arguments: {commands: ["id -u"], timeout_ms: 5000}
      - tool: shell
        arguments: '{"commands": ['                            # a string is sent verbatim
      - calls:                                                 # several calls in one turn
          - shell: ["wc -w /data/in.txt"]
          - tool: no_such_tool
      - answer: "The file has 42 words."

Tool call ids are ``call_1``, ``call_2``, … in the order the calls appear. The script reports no
token usage, so the loop falls back to the per-script estimate (``skillctl.tokens``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Sequence


from skillctl.errors import ConfigError, ModelError
from skillctl.yamlfile import read_yaml
from skillctl.messages import Message, ToolCall
from skillctl.schema import schema_problems, summarize
from skillctl.protocols import ModelReply, ToolSpec

SHELL_TOOL = "shell"


@lru_cache(maxsize=1)
def script_schema() -> dict[str, Any]:
    """The JSON Schema script files are validated against."""
    return json.loads(resources.files("skillctl.models").joinpath("script.schema.json").read_text("utf-8"))


@dataclass(frozen=True)
class ScriptStep:
    """One model turn of a script: text, and the calls (name, raw JSON arguments) it makes.
    A step without calls is the final answer."""

    content: str
    calls: tuple[tuple[str, str], ...] = ()

    @property
    def is_answer(self) -> bool:
        return not self.calls


def _call_of(spec: dict[str, Any], shell_tool: str) -> tuple[str, str]:
    if "shell" in spec:
        args: dict[str, Any] = {"commands": list(spec["shell"])}
        for key in ("timeout_ms", "max_output_length"):
            if key in spec:
                args[key] = spec[key]
        return shell_tool, json.dumps(args, ensure_ascii=False)
    raw = spec.get("arguments", {})
    # A string is the model's text as written, valid JSON or not: the harness must cope.
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)
    return spec["tool"], text


def parse_script(data: Any, *, source: str = "<script>", shell_tool: str = SHELL_TOOL) -> tuple[ScriptStep, ...]:
    """Validate already-loaded script data and turn it into steps; ``ConfigError`` names
    ``source`` and every problem with its place (``steps[2]: 'answer' must be a string``)."""
    if data is None:
        raise ConfigError(f"{source}: the script is empty; write a 'steps:' list (see skillctl/models/script.py)")
    problems = schema_problems(data, script_schema())
    if problems:
        raise ConfigError(f"{source}: {summarize(problems)}")
    steps: list[ScriptStep] = []
    for raw in data["steps"]:
        if "answer" in raw:
            steps.append(ScriptStep(raw["answer"]))
            continue
        specs = raw["calls"] if "calls" in raw else [raw]
        steps.append(ScriptStep(raw.get("say", ""), tuple(_call_of(s, shell_tool) for s in specs)))
    return tuple(steps)


def load_script(path: str | Path, *, shell_tool: str = SHELL_TOOL) -> tuple[ScriptStep, ...]:
    """Read and validate a script file; every failure is a one-line ``ConfigError``."""
    p = Path(path)
    data = read_yaml(p, error=ConfigError, missing=f"script file {p} does not exist; check the path in --model script:FILE")
    return parse_script(data, source=str(p), shell_tool=shell_tool)


class ScriptModel:
    """A ``Model`` that replays a script. One instance is one run: it remembers its position."""

    def __init__(self, path: str | Path, *, shell_tool: str = SHELL_TOOL) -> None:
        self.path = Path(path)
        self.name = f"script:{path}"
        self.steps = load_script(self.path, shell_tool=shell_tool)
        self.position = 0  # steps already returned
        self._next_call_id = 1

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply:
        """The next step of the script; ``ModelError`` once every step has been used."""
        if self.position >= len(self.steps):
            n = len(self.steps)
            raise ModelError(
                f"script {self.path} has {n} step{'s' if n != 1 else ''} and the run asked for step {n + 1}; "
                "end the script with an 'answer:' step"
            )
        step = self.steps[self.position]
        self.position += 1
        calls = []
        for name, arguments in step.calls:
            calls.append(ToolCall(f"call_{self._next_call_id}", name, arguments))
            self._next_call_id += 1
        return ModelReply(
            content=step.content,
            tool_calls=tuple(calls),
            raw={"script": str(self.path), "step": self.position},
        )
