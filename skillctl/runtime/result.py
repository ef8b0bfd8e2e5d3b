"""What a run produced: ``RunResult`` (JSON through ``to_dict``) and the checks run after it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillctl.messages import Message
from skillctl.protocols import ExecResult
from skillctl.runtime.stops import OUTCOME_EXIT_CODES

# A run that answered but whose workspace could not be copied to its output folder: the answer
# is printed all the same, and the exit code says the outputs are missing.
OUTPUT_FAILED_EXIT_CODE = 10


@dataclass(frozen=True)
class CheckResult:
    """One command run in the sandbox after the agent finished (to grade the run)."""

    command: str
    result: ExecResult

    @property
    def ok(self) -> bool:
        return self.result.ok

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, **self.result.to_dict(), "duration_s": round(self.result.duration_s, 4)}


@dataclass
class RunResult:
    """How a run ended and what it cost. ``steps`` is the model calls made (K in the seeds),
    ``tokens_used`` the sum of the context sizes every request sent (Z; ``Z`` is its deprecated
    alias, and JSON carries both keys for one release), ``duration_s`` the wall-clock time (the whole run, sandbox included, when
    it comes from ``skillctl.runtime.run``). ``history`` holds every message; it is not part of
    ``to_dict`` (the transcript has it)."""

    outcome: str
    answer: str | None
    steps: int
    tokens_used: int
    context_sizes: list[int]
    message: str = ""
    transcript: str | None = None
    prefix_reuse: float = 1.0
    duration_s: float = 0.0
    fit_passes: list[int] = field(default_factory=list)
    history: list[Message] = field(default_factory=list, repr=False)
    # Filled by skillctl.runtime.run around the loop:
    skills: list[dict[str, str]] = field(default_factory=list)  # name, version, digest of each loaded skill
    checks: list[CheckResult] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # files copied out of the workspace
    output_notes: list[str] = field(default_factory=list)  # hard links copied apart, entries skipped, bits stripped
    output_error: str | None = None  # why the workspace was not copied out (then nothing was)
    memory: str | None = None  # the long-term memory folder the run used
    warnings: list[str] = field(default_factory=list)  # what went wrong after the loop (copy-out, checks)
    egress: dict[str, Any] | None = None  # the egress proxy's counts, when the run had a network

    @property
    def exit_code(self) -> int:
        """The outcome's code; a run that answered but could not copy its outputs out exits 10."""
        code = OUTCOME_EXIT_CODES.get(self.outcome, 1)
        return OUTPUT_FAILED_EXIT_CODE if code == 0 and self.output_error else code

    @property
    def Z(self) -> int:  # noqa: N802 - the seeds' name, kept for one release
        """Deprecated: ``tokens_used``."""
        import warnings

        warnings.warn("RunResult.Z is deprecated; use RunResult.tokens_used", DeprecationWarning, stacklevel=2)
        return self.tokens_used

    @property
    def final_context(self) -> int:
        return self.context_sizes[-1] if self.context_sizes else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "answer": self.answer,
            "steps": self.steps,
            "tokens_used": self.tokens_used,
            "Z": self.tokens_used,  # the old key, for one release
            "context_sizes": self.context_sizes,
            "final_context": self.final_context,
            "prefix_reuse": round(self.prefix_reuse, 4),
            "duration_s": round(self.duration_s, 3),
            "message": self.message,
            "transcript": self.transcript,
            "skills": self.skills,
            "checks": [c.to_dict() for c in self.checks],
            "outputs": self.outputs,
            "output_notes": self.output_notes,
            "output_error": self.output_error,
            "memory": self.memory,
            "warnings": self.warnings,
            "egress": self.egress,
        }
