"""The agent loop: v_k = M(c_k); the model only proposes, the harness runs each tool call it
accepts (unknown tools and bad arguments become error results); stop at the first final answer
or at a budget; the cost of every call is recorded.

The loop knows only the ``Model`` protocol and a ``ToolBox`` (whose shell tool wraps a
``Sandbox``). It is a few small steps, each a method a subclass may replace (the mini-swe-agent
shape)::

    run(system, task)                 start, loop over step(), end on a StopRun, result
      step()                          one model call and what it proposes
        check_limits()                steps, wall clock, cancellation
        fit_request()                 what is sent: the history fitted to the context budget
        query(request)                the model call, its cost c_k, the assistant message
        execute(calls) -> observe()   run each tool call, append its result

Every way of ending is a ``StopRun`` (``skillctl.runtime.stops``), raised by a step or mapped
from an error in one place (``stop_for``); the transcript's ``run_end`` is written in
``finally``, whatever happened (or left to the caller, ``end_transcript=False``). What is sent may differ from the history; the history never
changes.

Cost: c_k is the size of the context sent at call k — the API's reported input tokens when
it reports them, else the per-script estimate (``skillctl.tokens``) of the messages plus the
tool definitions — and Z = Σ c_k. With a constant growth d per step, Z = K·c₁ + d·K(K−1)/2.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from skillctl.context import FitResult, PrefixReuse, fit
from skillctl.messages import Message, ToolCall, assistant, system, tool_result, user
from skillctl.protocols import Model, ModelReply
from skillctl.runtime.deadline import Deadline
from skillctl.runtime.result import RunResult
from skillctl.runtime.stops import (
    OUTCOME_EXIT_CODES,
    Answered,
    BudgetExhausted,
    Cancelled,
    Crashed,
    InvalidCalls,
    StopRun,
    TimeExhausted,
    TokensExhausted,
    stop_for,
)
from skillctl.runtime.tools import ToolBox, ToolOutcome, tool_spec_tokens
from skillctl.runtime.transcript import Transcript

__all__ = ["OUTCOME_EXIT_CODES", "Agent", "Limits", "RunResult"]


@dataclass(frozen=True)
class Limits:
    max_steps: int = 30  # K_max
    max_seconds: float | None = None  # wall clock for the whole run
    max_total_tokens: int | None = None  # budget on Z
    max_invalid_in_a_row: int = 3
    context_budget: int = 100_000  # tokens per request (what is sent is fitted to this)


class Agent:
    """One agent run at a time. ``cancel``: an event another thread sets to stop the run at the
    next step (the shell tool also stops waiting for running commands). ``deadline``: the run's
    wall clock, shared with the shell tool (which cuts commands at it) and with sub-agents, which
    spend their parent's time; by default one of ``limits.max_seconds``, started with the run."""

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
        cancel: threading.Event | None = None,
        deadline: Deadline | None = None,
        end_transcript: bool = True,
    ) -> None:
        self.model = model
        self.tools = tools
        self.limits = limits
        self.transcript = transcript or Transcript(None)
        self.progress = progress or (lambda _m: None)
        self.clock = clock
        # What is sent for a history: ``fit`` (clear, then cut) or a summarising ``Compactor``.
        self.fitter = fitter or (lambda history, budget: fit(history, budget))
        self.cancel = cancel
        self.own_deadline = deadline is None  # made per run in start(); a given one is shared
        self.deadline = deadline if deadline is not None else Deadline(limits.max_seconds, clock=clock)
        # False: whoever drives this agent writes ``run_end`` (``end_run``) once it has added to the
        # result what it knows beyond the loop (the runner: skills, memory, checks, outputs).
        self.end_transcript = end_transcript
        self.result: RunResult | None = None  # the last run's, once it ended

    # ------------------------------------------------------------------ the run

    def run(self, system_text: str, task: str) -> RunResult:
        self.start(system_text, task)
        stop: StopRun = Crashed("the run ended by an unexpected error")
        try:
            while True:
                self.step()
        except BaseException as exc:
            mapped = stop_for(exc)
            if mapped is None:
                stop.detail = repr(exc)
                raise
            stop = mapped
        finally:
            result = self.finish(stop)
        return result

    def start(self, system_text: str, task: str) -> None:
        """Fresh state for one run; c₁ = the system text and the task."""
        self.specs = self.tools.specs
        self.spec_tokens = tool_spec_tokens(self.specs)
        self.history: list[Message] = []
        self.sizes: list[int] = []  # c_k per model call
        self.passes: list[int] = []  # which fitting pass each request needed
        self.prefix = PrefixReuse()
        self.invalid_in_a_row = 0
        self.started = self.clock()
        if self.own_deadline:
            self.deadline = Deadline(self.limits.max_seconds, clock=self.clock)
        self.deadline.start()  # a shared one may be running already: a sub-agent spends its parent's
        self.transcript.event(
            "run_start", model=self.model.name,
            tools=[s.name for s in self.specs], limits=self.limits.__dict__,
        )
        self.append(system(system_text))
        self.append(user(task))

    def step(self) -> None:
        """One model call and the tool calls it proposes; raises ``Answered`` at the final answer."""
        self.check_limits()
        request = self.fit_request()
        reply = self.query(request)
        if not reply.tool_calls:
            self.progress(f"step {len(self.sizes)}: answer ({self.sizes[-1]} tokens in context)")
            raise Answered(reply.content)
        self.execute(reply.tool_calls)

    def finish(self, stop: StopRun) -> RunResult:
        """The result for ``stop``; the transcript's last event, written whatever happened."""
        if stop.from_error:
            self.transcript.event("error", kind=stop.outcome, detail=stop.detail or stop.message)
        result = RunResult(
            outcome=stop.outcome, answer=stop.answer, steps=len(self.sizes),
            Z=sum(self.sizes), context_sizes=list(self.sizes), message=stop.message,
            transcript=str(self.transcript.path) if self.transcript.path else None,
            prefix_reuse=self.prefix.ratio if self.prefix.compared else 1.0, duration_s=self.clock() - self.started,
            fit_passes=list(self.passes), history=self.history,
        )
        self.result = result
        if self.end_transcript:
            self.end_run(result)
        return result

    def end_run(self, result: RunResult) -> None:
        """The transcript's last event: ``run_end`` with ``result``."""
        self.transcript.event("run_end", **result.to_dict())
        self.transcript.close()

    # ------------------------------------------------------------------ the steps

    def append(self, message: Message, **extra: Any) -> None:
        self.history.append(message)
        self.transcript.message(message, **extra)

    def check_limits(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled("the run was cancelled")
        if len(self.sizes) >= self.limits.max_steps:
            raise BudgetExhausted(f"step budget exhausted: {self.limits.max_steps} model calls without a final answer")
        self.check_time()

    def check_time(self, during: str = "") -> None:
        """``TimeExhausted`` once the run's deadline has passed; ``during`` says where."""
        if self.deadline.passed():
            raise TimeExhausted(f"time budget exhausted after {self.deadline.elapsed():.1f} s{during}")

    def fit_request(self) -> FitResult:
        fitted = self.fitter(self.history, max(1, self.limits.context_budget - self.spec_tokens))
        # Checked against the request about to be sent, not only the calls already made:
        # otherwise the last request could carry Z past the budget by a whole context.
        budget = self.limits.max_total_tokens
        if budget is not None and sum(self.sizes) + fitted.tokens + self.spec_tokens > budget:
            raise TokensExhausted(
                f"token budget exhausted: Z = {sum(self.sizes)}, and the next request "
                f"(~{fitted.tokens + self.spec_tokens} tokens) would pass {budget}"
            )
        self.prefix.observe(fitted.messages)
        self.passes.append(fitted.pass_used)
        return fitted

    def query(self, request: FitResult) -> ModelReply:
        step = len(self.sizes) + 1
        estimate = request.tokens + self.spec_tokens
        self.transcript.request(step, request.messages, estimated_tokens=estimate, fit=request.to_dict())
        t0 = self.clock()
        reply = self.model.complete(request.messages, self.specs)
        c_k = reply.input_tokens if reply.input_tokens is not None else estimate
        self.sizes.append(c_k)
        self.transcript.event("reply", step=step, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                              c_k=c_k, seconds=round(self.clock() - t0, 4))
        self.append(assistant(reply.content, reply.tool_calls))
        return reply

    def execute(self, calls: Sequence[ToolCall]) -> None:
        """Run every call of one reply; a turn of only invalid calls counts towards a stop."""
        step = len(self.sizes)
        all_invalid = True
        for call in calls:
            # The model's reply may come after the deadline, and a call (a command cut at the
            # deadline, a sub-agent) may spend the rest of it: the run ends there, not a step later.
            self.check_time(f", before step {step}'s {call.name} call")
            self.progress(f"step {step}: {call.name} {call.arguments[:200]}")
            outcome = self.tools.call(call)
            if outcome.ok:
                all_invalid = False
            else:
                self.progress(f"step {step}: refused invalid call: {outcome.text[:200]}")
            self.observe(call, outcome)
            self.check_time(f", during step {step}'s {call.name} call")
        self.invalid_in_a_row = self.invalid_in_a_row + 1 if all_invalid else 0
        if self.invalid_in_a_row >= self.limits.max_invalid_in_a_row:
            raise InvalidCalls(f"stopped after {self.invalid_in_a_row} model turns in a row with only invalid tool calls")

    def observe(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """c_{k+1} = c_k ⊕ v_k ⊕ N(v_k): the tool's result joins the history."""
        self.append(tool_result(call, outcome.text), details=outcome.details, valid=outcome.ok)
