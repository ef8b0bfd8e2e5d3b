"""The agent loop (MISSION C1–C4): v_k = M(c_k); tool calls run by the harness; stop at the
first final answer or at a budget.

The loop knows only the ``Model`` protocol and a ``ToolBox`` (whose shell tool wraps a
``Sandbox``). Before every request the history is fitted to the context budget (E1–E2); what is
sent may differ from the history, the history never changes. Control flow uses ``StopRun``
exceptions; the transcript's ``run_end`` is written in ``finally``, whatever happened.

Cost (C4): c_k is the size of the context sent at call k — the API's reported input tokens when
it reports them, else the E5 estimate of the messages plus the tool definitions — and
Z = Σ c_k. With a constant growth d per step, Z = K·c₁ + d·K(K−1)/2.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from skillctl.context import FitResult, PrefixReuse, fit
from skillctl.errors import CONTEXT_TOO_LONG_MESSAGE, ContextTooLong, ModelError, SandboxError
from skillctl.messages import Message, assistant, system, tool_result, user
from skillctl.protocols import Model
from skillctl.runtime.tools import ToolBox, tool_spec_tokens
from skillctl.runtime.transcript import Transcript

OUTCOME_EXIT_CODES = {
    "answered": 0,
    "budget_exhausted": 3,
    "time_exhausted": 4,
    "tokens_exhausted": 5,
    "invalid_calls": 6,
    "context_too_long": 7,
    "model_error": 8,
    "sandbox_error": 9,
    "interrupted": 130,
}


class StopRun(Exception):
    """Ends the loop with an outcome (not an error of the harness)."""

    outcome = "stopped"

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


class Answered(StopRun):
    outcome = "answered"


class BudgetExhausted(StopRun):
    outcome = "budget_exhausted"


class TimeExhausted(StopRun):
    outcome = "time_exhausted"


class TokensExhausted(StopRun):
    outcome = "tokens_exhausted"


class InvalidCalls(StopRun):
    outcome = "invalid_calls"


@dataclass(frozen=True)
class Limits:
    max_steps: int = 30  # K_max
    max_seconds: float | None = None  # wall clock for the whole run
    max_total_tokens: int | None = None  # budget on Z
    max_invalid_in_a_row: int = 3
    context_budget: int = 100_000  # tokens per request (what is sent is fitted to this)


@dataclass
class RunResult:
    outcome: str
    answer: str | None
    steps: int  # K: model calls made
    Z: int
    context_sizes: list[int]
    message: str = ""
    transcript: str | None = None
    prefix_reuse: float = 1.0
    fit_passes: list[int] = field(default_factory=list)
    history: list[Message] = field(default_factory=list, repr=False)

    @property
    def exit_code(self) -> int:
        return OUTCOME_EXIT_CODES.get(self.outcome, 1)

    @property
    def final_context(self) -> int:
        return self.context_sizes[-1] if self.context_sizes else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "answer": self.answer,
            "steps": self.steps,
            "Z": self.Z,
            "context_sizes": self.context_sizes,
            "final_context": self.final_context,
            "prefix_reuse": round(self.prefix_reuse, 4),
            "message": self.message,
            "transcript": self.transcript,
        }


class Agent:
    def __init__(
        self,
        model: Model,
        tools: ToolBox,
        *,
        limits: Limits = Limits(),
        transcript: Transcript | None = None,
        progress: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        fitter: Callable[[list[Message], int], FitResult] | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.limits = limits
        self.transcript = transcript or Transcript(None)
        self.progress = progress or (lambda _m: None)
        self.clock = clock
        # What is sent for a history: ``fit`` (clear, then cut) or a Compactor's ``fit`` (D7).
        self.fitter = fitter or (lambda history, budget: fit(history, budget))

    def run(self, system_text: str, task: str) -> RunResult:
        specs = self.tools.specs
        spec_tokens = tool_spec_tokens(specs)
        history: list[Message] = []
        sizes: list[int] = []
        passes: list[int] = []
        prefix = PrefixReuse()
        invalid_in_a_row = 0
        answer: str | None = None
        outcome, message = "answered", ""
        started = self.clock()
        self.transcript.event(
            "run_start", model=getattr(self.model, "name", type(self.model).__name__),
            tools=[s.name for s in specs], limits=self.limits.__dict__,
        )

        def append(m: Message, **extra: Any) -> None:
            history.append(m)
            self.transcript.message(m, **extra)

        try:
            append(system(system_text))
            append(user(task))
            while True:
                if len(sizes) >= self.limits.max_steps:
                    raise BudgetExhausted(f"step budget exhausted: {self.limits.max_steps} model calls without a final answer")
                if self.limits.max_seconds is not None and self.clock() - started > self.limits.max_seconds:
                    raise TimeExhausted(f"time budget exhausted after {self.clock() - started:.1f} s")
                fitted: FitResult = self.fitter(history, max(1, self.limits.context_budget - spec_tokens))
                # Checked against the request about to be sent, not only the calls already made:
                # otherwise the last request could carry Z past the budget by a whole context.
                if self.limits.max_total_tokens is not None and sum(sizes) + fitted.tokens + spec_tokens > self.limits.max_total_tokens:
                    raise TokensExhausted(
                        f"token budget exhausted: Z = {sum(sizes)}, and the next request "
                        f"(~{fitted.tokens + spec_tokens} tokens) would pass {self.limits.max_total_tokens}"
                    )
                prefix.observe(fitted.messages)
                passes.append(fitted.pass_used)
                step = len(sizes) + 1
                self.transcript.request(step, fitted.messages, estimated_tokens=fitted.tokens + spec_tokens, fit=fitted.to_dict())
                t0 = self.clock()
                reply = self.model.complete(fitted.messages, specs)
                c_k = reply.input_tokens if reply.input_tokens is not None else fitted.tokens + spec_tokens
                sizes.append(c_k)
                self.transcript.event("reply", step=step, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                                      c_k=c_k, seconds=round(self.clock() - t0, 4))
                append(assistant(reply.content, reply.tool_calls))
                if not reply.tool_calls:
                    answer = reply.content
                    self.progress(f"step {step}: answer ({c_k} tokens in context)")
                    raise Answered()
                all_invalid = True
                for call in reply.tool_calls:
                    self.progress(f"step {step}: {call.name} {call.arguments[:200]}")
                    result = self.tools.call(call)
                    if result.ok:
                        all_invalid = False
                    else:
                        self.progress(f"step {step}: refused invalid call: {result.text[:200]}")
                    append(tool_result(call, result.text), details=result.details, valid=result.ok)
                invalid_in_a_row = invalid_in_a_row + 1 if all_invalid else 0
                if invalid_in_a_row >= self.limits.max_invalid_in_a_row:
                    raise InvalidCalls(f"stopped after {invalid_in_a_row} model turns in a row with only invalid tool calls")
        except StopRun as stop:
            outcome, message = stop.outcome, stop.message
        except ContextTooLong as exc:
            outcome, message = "context_too_long", CONTEXT_TOO_LONG_MESSAGE
            self.transcript.event("error", kind="context_too_long", detail=exc.detail)
        except ModelError as exc:
            outcome, message = "model_error", str(exc)
        except SandboxError as exc:
            outcome, message = "sandbox_error", str(exc)
        except KeyboardInterrupt:
            outcome, message = "interrupted", "interrupted by the user"
        finally:
            result = RunResult(
                outcome=outcome, answer=answer, steps=len(sizes), Z=sum(sizes), context_sizes=sizes, message=message,
                transcript=str(self.transcript.path) if self.transcript.path else None,
                prefix_reuse=prefix.ratio if prefix.compared else 1.0, fit_passes=passes, history=history,
            )
            self.transcript.event("run_end", **result.to_dict())
            self.transcript.close()
        return result
