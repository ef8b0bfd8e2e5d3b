"""The three seams of the runtime, as protocols.

The agent loop knows a ``Model`` and a ``Sandbox``; the loader knows a ``Store`` and a
``Sandbox``. Concrete backends (Docker, local subprocesses, the folder registry, OCI, the scripted
and OpenAI models) live at the edges and are chosen by name in ``cli``; nothing here imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Sequence, runtime_checkable

from skillctl.messages import Message, ToolCall

# ---------------------------------------------------------------------------- sandbox


@dataclass(frozen=True)
class ExecResult:
    """What one command did. A non-zero exit is data, not an exception; so is a timeout
    (``outcome_type == "timeout"``) — the model is told and may try something else."""

    stdout: str
    stderr: str
    outcome_type: Literal["exit", "timeout"]
    exit_code: int | None = None
    duration_s: float = 0.0
    # Bytes dropped by the capture cap (the flood never reached host memory).
    stdout_dropped: int = 0
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.outcome_type == "exit" and self.exit_code == 0

    def to_dict(self) -> dict[str, Any]:
        """The hosted shell tool's result shape."""
        outcome: dict[str, Any] = {"type": self.outcome_type}
        if self.outcome_type == "exit":
            outcome["exit_code"] = self.exit_code
        return {"stdout": self.stdout, "stderr": self.stderr, "outcome": outcome}


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place to run commands, with a filesystem for inputs and outputs.

    Contract: ``exec`` returns an ``ExecResult`` for any command that ran, including non-zero
    exits and in-sandbox timeouts; it raises ``SandboxError`` only when the sandbox itself is
    unusable, and ``SandboxTimeout`` when even the host-side deadline passed. Files move as tar
    archives (``put_archive``/``get_archive``), never through bind mounts.
    """

    def start(self) -> None: ...

    def exec(
        self,
        command: str,
        *,
        timeout_s: float = 60.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult: ...

    def exec_many(self, commands: Sequence[str], *, timeout_s: float = 60.0) -> list[ExecResult]:
        """Run ``commands`` concurrently, each in its own session; results in input order."""
        ...

    def put_archive(self, dest_dir: str, tar_bytes: bytes, *, user: str | None = None) -> None: ...

    def get_archive(self, path: str) -> bytes: ...

    def stop(self) -> None: ...


# ---------------------------------------------------------------------------- store


@dataclass(frozen=True)
class ResolvedSkill:
    """One exact skill version a reference resolved to."""

    id: str  # stable skill id, "skill_…"
    name: str
    version: str
    description: str
    digest: str  # "sha256:…" of the bundle (.skill.tgz) bytes
    tar_digest: str = ""  # "sha256:…" of the uncompressed tar, stable across zlib versions
    size: int = 0
    yanked: bool = False


@runtime_checkable
class Store(Protocol):
    """Where bundles live. ``resolve`` reads metadata only (B1); ``fetch`` returns bundle bytes
    whose sha256 has been checked against ``ResolvedSkill.digest`` (B2)."""

    def resolve(self, ref: str) -> ResolvedSkill: ...

    def fetch(self, skill: ResolvedSkill) -> bytes: ...


# ---------------------------------------------------------------------------- model


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool: name, description, JSON Schema of its parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ModelReply:
    """One model turn: text and/or tool calls. No tool calls means a final answer."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int | None = None  # as reported by the API, when it reports them
    output_tokens: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@runtime_checkable
class Model(Protocol):
    """``v_k = M(c_k)``. The model only proposes; it never runs anything."""

    name: str

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply: ...
