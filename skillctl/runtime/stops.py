"""How a run ends. Every way is a ``StopRun`` subclass carrying its outcome and exit code, and
``stop_for`` is the one place that turns an exception into one:

    outcome            exit  raised by
    answered             0   the loop, at the first reply without tool calls
    budget_exhausted     3   the loop, before model call K_max + 1
    time_exhausted       4   the loop, once the wall-clock budget has passed
    tokens_exhausted     5   the loop, before a request that would carry Z past its budget
    invalid_calls        6   the loop, after N model turns in a row of only invalid tool calls
    context_too_long     7   stop_for(ContextTooLong), with the message the person reads
    model_error          8   stop_for(ModelError)
    sandbox_error        9   stop_for(SandboxError): the sandbox itself is unusable
    cancelled          130   the loop or the shell tool, when the run's cancel event is set
    interrupted        130   stop_for(KeyboardInterrupt): Ctrl-C
    error                1   only in the transcript, for a bug that escaped (it is re-raised)

Not an ending but a code: a run that answered whose workspace could not be copied to its output
folder exits 10 (``RunResult.exit_code``, ``OUTPUT_FAILED_EXIT_CODE``); its answer stands.

Loop control by exceptions (the mini-swe-agent way): a step raises, ``Agent.run`` catches once.
"""

from __future__ import annotations

from skillctl.errors import CONTEXT_TOO_LONG_MESSAGE, ContextTooLong, ModelError, SandboxError


class StopRun(Exception):
    """Ends the loop with an outcome (not an error of the harness)."""

    outcome = "stopped"
    exit_code = 1
    from_error = False  # True when an error caused it: the transcript records an "error" event
    answer: str | None = None  # the final answer, for the one ending that has one

    def __init__(self, message: str = "", *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail  # more than the person needs, for the transcript


class Answered(StopRun):
    outcome, exit_code = "answered", 0

    def __init__(self, answer: str) -> None:
        super().__init__()
        self.answer = answer


class BudgetExhausted(StopRun):
    outcome, exit_code = "budget_exhausted", 3


class TimeExhausted(StopRun):
    outcome, exit_code = "time_exhausted", 4


class TokensExhausted(StopRun):
    outcome, exit_code = "tokens_exhausted", 5


class InvalidCalls(StopRun):
    outcome, exit_code = "invalid_calls", 6


class ContextFull(StopRun):
    outcome, exit_code, from_error = "context_too_long", 7, True


class ModelFailed(StopRun):
    outcome, exit_code, from_error = "model_error", 8, True


class SandboxFailed(StopRun):
    outcome, exit_code, from_error = "sandbox_error", 9, True


class Cancelled(StopRun):
    outcome, exit_code = "cancelled", 130


class Interrupted(StopRun):
    outcome, exit_code = "interrupted", 130


class Crashed(StopRun):
    """A bug escaped the loop: recorded in the transcript, then the exception is re-raised."""

    outcome, exit_code, from_error = "error", 1, True


ENDINGS: tuple[type[StopRun], ...] = (
    Answered, BudgetExhausted, TimeExhausted, TokensExhausted, InvalidCalls, ContextFull, ModelFailed, SandboxFailed,
    Cancelled, Interrupted, Crashed,
)
OUTCOME_EXIT_CODES: dict[str, int] = {cls.outcome: cls.exit_code for cls in ENDINGS}


def stop_for(exc: BaseException) -> StopRun | None:
    """The stop an exception means, or None when it is not a way for a run to end (a bug, or
    ``SystemExit``): the caller re-raises those. A tool failure is not an exception at all —
    it reaches the model as a result."""
    if isinstance(exc, StopRun):
        return exc
    if isinstance(exc, ContextTooLong):
        return ContextFull(CONTEXT_TOO_LONG_MESSAGE, detail=exc.detail)
    if isinstance(exc, ModelError):
        return ModelFailed(str(exc))
    if isinstance(exc, SandboxError):
        return SandboxFailed(str(exc))
    if isinstance(exc, KeyboardInterrupt):
        return Interrupted("interrupted by the user")
    return None
