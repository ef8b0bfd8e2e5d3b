"""The agent loop (tool calls, budgets, cost, context fitting) with the script model and small
real tools, each test isolating one clause. The end-to-end runs in a container are in
``test_loop_docker.py``."""

from __future__ import annotations

import json

import pytest

from skillctl.context import CLEARED_NOTE
from skillctl.errors import CONTEXT_TOO_LONG_MESSAGE, ConfigError
from skillctl.messages import Message, ToolCall, assistant, system, user
from skillctl.runtime.loop import OUTCOME_EXIT_CODES, Agent, Limits
from skillctl.runtime.tools import ToolBox, tool_spec_tokens
from skillctl.runtime.transcript import Transcript, rebuild_requests

from .helpers import NoteTool, note, script_model

ANSWER = {"answer": "all done"}


def run(tmp_path, steps, *tools, limits=Limits(), system_text="You are a test agent.", task="Do the task.", **kw):
    model = script_model(tmp_path, steps)
    toolbox = ToolBox([t.tool for t in tools])
    path = tmp_path / "run.jsonl"
    result = Agent(model, toolbox, limits=limits, transcript=Transcript(path), **kw).run(system_text, task)
    return result, model, path


def tool_messages(result) -> list[str]:
    return [m.content for m in result.history if m.role == "tool"]


def events(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_tool_calls_run_until_the_final_answer(tmp_path):
    tool = NoteTool()
    result, model, _ = run(tmp_path, [note("a"), note("b", repeat=2), ANSWER], tool)
    assert (result.outcome, result.answer, result.steps, result.exit_code) == ("answered", "all done", 3, 0)
    assert tool.calls == [{"text": "a"}, {"text": "b", "repeat": 2}]
    assert tool_messages(result) == ["noted: a", "noted: bb"]
    # c_{k+1} = c_k ⊕ v_k ⊕ N(v_k): each request is the previous one plus the call and its result.
    assert [len(req) for req in model.sent] == [2, 4, 6]
    assert model.sent[1][:2] == model.sent[0] and model.sent[2][:4] == model.sent[1]
    assert model.sent[1][2]["tool_calls"][0]["name"] == "note" and model.sent[1][3]["content"] == "noted: a"
    # The tools' name, description and schema go with every request.
    assert [[(t.name, t.parameters) for t in tools] for tools in model.tools] == [[("note", NoteTool.SCHEMA)]] * 3


def test_unknown_tool_is_answered_with_an_error_and_nothing_runs(tmp_path):
    tool = NoteTool()
    steps = [{"tool": "no_such_tool", "arguments": {"text": "x"}}, ANSWER]
    result, _, _ = run(tmp_path, steps, tool)
    assert result.outcome == "answered"
    assert tool.calls == []
    assert tool_messages(result) == ["error: unknown tool 'no_such_tool'; available tools: note. Nothing was run."]


def test_invalid_json_and_schema_failures_name_the_problem(tmp_path):
    tool = NoteTool()
    steps = [
        {"tool": "note", "arguments": '{"text": '},  # not JSON at all
        note("ok-1"),
        {"tool": "note", "arguments": {"text": 5}},  # wrong type
        note("ok-2"),
        {"tool": "note", "arguments": {"colour": "red"}},  # missing + unexpected property
        note("ok-3"),
        {"tool": "note", "arguments": {"text": "x", "repeat": 0}},  # below the minimum
        ANSWER,
    ]
    result, _, _ = run(tmp_path, steps, tool)
    assert result.outcome == "answered"
    assert [c["text"] for c in tool.calls] == ["ok-1", "ok-2", "ok-3"]  # only the valid ones ran
    bad_json, _, wrong_type, _, missing, _, minimum = tool_messages(result)
    assert bad_json.startswith("error: arguments of note are not valid JSON (") and bad_json.endswith("Nothing was run.")
    assert wrong_type == "error: invalid arguments for note: text: 5 is not of type 'string'. Nothing was run."
    assert "'text' is a required property" in missing and "'colour' was unexpected" in missing
    assert minimum == "error: invalid arguments for note: repeat: 0 is less than the minimum of 1. Nothing was run."


def test_three_invalid_turns_in_a_row_stop_the_run(tmp_path):
    tool = NoteTool()
    steps = [
        {"tool": "no_such_tool", "arguments": {}},
        {"tool": "note", "arguments": "not json"},
        {"tool": "note", "arguments": {}},
        note("never reached"),
        ANSWER,
    ]
    result, _, path = run(tmp_path, steps, tool)
    assert (result.outcome, result.steps, result.answer, result.exit_code) == ("invalid_calls", 3, None, 6)
    assert tool.calls == []
    assert "3 model turns in a row" in result.message
    assert events(path)[-1]["type"] == "run_end" and events(path)[-1]["outcome"] == "invalid_calls"


def test_a_valid_call_resets_the_invalid_count(tmp_path):
    tool = NoteTool()
    bad = {"tool": "no_such_tool", "arguments": {}}
    mixed = {"calls": [{"tool": "no_such_tool"}, {"tool": "note", "arguments": {"text": "m"}}]}
    steps = [bad, bad, note("v"), bad, bad, mixed, bad, bad, ANSWER]
    result, _, _ = run(tmp_path, steps, tool)
    assert (result.outcome, result.steps) == ("answered", 9)
    assert [c["text"] for c in tool.calls] == ["v", "m"]


def test_max_steps_ends_with_budget_exhausted(tmp_path):
    tool = NoteTool()
    result, model, _ = run(tmp_path, [note(str(i)) for i in range(10)] + [ANSWER], tool, limits=Limits(max_steps=4))
    assert (result.outcome, result.steps, result.answer, result.exit_code) == ("budget_exhausted", 4, None, 3)
    assert len(model.sent) == 4 and len(tool.calls) == 4
    assert "4 model calls" in result.message


class StepClock:
    """Wall-clock time as the run sees it; the tool advances it, so the test does not sleep."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_time_budget_ends_with_time_exhausted(tmp_path):
    clock = StepClock()
    tool = NoteTool()
    original = tool.tool.procedure

    def slow(args):
        clock.now += 0.4  # each command "takes" 0.4 s
        return original(args)

    tool.tool = tool.tool.__class__(tool.tool.name, tool.tool.description, tool.tool.parameters, slow)
    result, model, _ = run(tmp_path, [note(str(i)) for i in range(10)] + [ANSWER], tool,
                           limits=Limits(max_seconds=1.0), clock=clock)
    # After three calls 1.2 s have passed: the fourth request is never sent.
    assert (result.outcome, result.steps, result.exit_code) == ("time_exhausted", 3, 4)
    assert len(tool.calls) == 3 and len(model.sent) == 3


def constant_growth(result_size: int) -> tuple[int, int, ToolBox]:
    """c₁ and the growth d per step of a run with one constant-size tool, computed from the
    messages the loop must append (not from the loop's own numbers)."""
    tool = NoteTool(result_size=result_size)
    toolbox = ToolBox([tool.tool])
    c1 = system("SYSTEM").tokens + user("TASK").tokens + tool_spec_tokens(toolbox.specs)
    call = ToolCall("call_1", "note", json.dumps({"text": "same"}))
    d = assistant("", (call,)).tokens + Message("tool", "r" * result_size, tool_call_id="call_1", name="note").tokens
    return c1, d, toolbox


def test_cost_reproduces_z_formula_for_constant_growth(tmp_path):
    K = 12
    c1, d, toolbox = constant_growth(400)
    model = script_model(tmp_path, [note("same")] * (K - 1) + [ANSWER])
    result = Agent(model, toolbox, limits=Limits(max_steps=K)).run("SYSTEM", "TASK")
    assert (result.outcome, result.steps) == ("answered", K)
    assert d > 100  # the growth is real, not a rounding artefact
    assert result.context_sizes == [c1 + k * d for k in range(K)]
    assert result.tokens_used == K * c1 + d * K * (K - 1) // 2 == sum(result.context_sizes)
    assert result.final_context == c1 + (K - 1) * d
    assert result.to_dict()["Z"] == result.tokens_used and result.to_dict()["context_sizes"] == result.context_sizes


def test_token_budget_stops_before_a_request_would_pass_it(tmp_path):
    c1, d, toolbox = constant_growth(400)
    budget = 3 * c1 + 3 * d + 1  # room for three requests (c1, c1+d, c1+2d), not for a fourth
    model = script_model(tmp_path, [note("same")] * 10 + [ANSWER])
    result = Agent(model, toolbox, limits=Limits(max_total_tokens=budget)).run("SYSTEM", "TASK")
    assert (result.outcome, result.steps, result.exit_code) == ("tokens_exhausted", 3, 5)
    assert result.tokens_used == 3 * c1 + 3 * d <= budget
    assert len(model.sent) == 3


def test_transcript_rebuilds_exactly_what_each_request_sent(tmp_path):
    tool = NoteTool(result_size=4000)  # ~1000 tokens a result: clearing must start soon
    steps = [note(f"step {i}") for i in range(9)] + [ANSWER]
    result, model, path = run(tmp_path, steps, tool, limits=Limits(context_budget=4000))
    assert result.outcome == "answered"
    rebuilt = rebuild_requests(path)
    assert rebuilt == model.sent
    # Fitting really changed what was sent (so the rebuild covered replaced messages too)…
    assert any(m["content"] == CLEARED_NOTE for req in model.sent for m in req)
    assert 1 in result.fit_passes
    inline = [e for e in events(path) if e["type"] == "request" for item in e["messages"] if "inline" in item]
    assert inline
    # …while the history and the transcript keep every result whole.
    assert tool_messages(result) == ["r" * 4000] * 9
    logged = [e["message"]["content"] for e in events(path) if e["type"] == "message" and e["message"]["role"] == "tool"]
    assert logged == ["r" * 4000] * 9


def test_the_transcript_is_readable_by_its_owner_only(tmp_path):
    import stat

    fresh = tmp_path / "runs" / "deep" / "run.jsonl"
    existing = tmp_path / "old.jsonl"
    existing.write_text("old run\n")
    existing.chmod(0o644)
    for path in (fresh, existing):
        Transcript(path).close()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(fresh.parent.stat().st_mode) == 0o700
    assert existing.read_text() == ""  # replaced, as before


def test_small_context_budget_clears_old_results_and_still_answers(tmp_path):
    tool = NoteTool(result_size=4000)
    steps = [note(f"step {i}") for i in range(12)] + [ANSWER]
    result, model, _ = run(tmp_path, steps, tool, limits=Limits(context_budget=3000))
    assert (result.outcome, result.answer) == ("answered", "all done")
    last = model.sent[-1]
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert len(results) == 12  # every call is still answered, in place
    cleared = results.count(CLEARED_NOTE)
    assert cleared >= 4
    # Oldest first: the cleared ones are a prefix, the newest result is intact.
    assert results == [CLEARED_NOTE] * cleared + ["r" * 4000] * (12 - cleared)
    assert max(result.context_sizes) <= 3000


def test_context_too_long_ends_the_run_with_the_person_facing_message(tmp_path):
    tool = NoteTool()
    result, model, path = run(tmp_path, [ANSWER], tool, system_text="word " * 4000, limits=Limits(context_budget=1000))
    assert (result.outcome, result.exit_code) == ("context_too_long", OUTCOME_EXIT_CODES["context_too_long"])
    assert result.message == CONTEXT_TOO_LONG_MESSAGE
    assert model.sent == []  # nothing was sent that could not fit
    assert [e["kind"] for e in events(path) if e["type"] == "error"] == ["context_too_long"]


def test_a_model_failure_ends_the_run_and_the_transcript_is_closed(tmp_path):
    result, _, path = run(tmp_path, [note("a")], NoteTool())  # the script runs out of steps
    assert (result.outcome, result.steps, result.exit_code) == ("model_error", 1, 8)
    assert "end the script with an 'answer:' step" in result.message
    last = events(path)[-1]
    assert last["type"] == "run_end" and last["outcome"] == "model_error" and last["Z"] == result.tokens_used
    assert [(e["kind"], e["detail"]) for e in events(path) if e["type"] == "error"] == [("model_error", result.message)]


def test_errors_map_to_outcomes_in_one_place():
    from skillctl.errors import ContextTooLong, ModelError, SandboxError, SandboxTimeout
    from skillctl.runtime.stops import Answered, stop_for

    cases = {ContextTooLong("413"): ("context_too_long", 7), ModelError("down"): ("model_error", 8),
             SandboxError("gone"): ("sandbox_error", 9), SandboxTimeout("stuck"): ("sandbox_error", 9),
             KeyboardInterrupt(): ("interrupted", 130), Answered("x"): ("answered", 0)}
    for exc, (outcome, code) in cases.items():
        stop = stop_for(exc)
        assert (stop.outcome, stop.exit_code, OUTCOME_EXIT_CODES[outcome]) == (outcome, code, code), exc
    assert stop_for(ContextTooLong("413")).message == CONTEXT_TOO_LONG_MESSAGE
    assert stop_for(ValueError("a bug")) is None and stop_for(SystemExit(2)) is None
    assert OUTCOME_EXIT_CODES == {"answered": 0, "budget_exhausted": 3, "time_exhausted": 4, "tokens_exhausted": 5,
                                  "invalid_calls": 6, "context_too_long": 7, "model_error": 8, "sandbox_error": 9,
                                  "cancelled": 130, "interrupted": 130, "error": 1}


def test_a_bug_in_a_tool_is_raised_and_the_transcript_still_ends(tmp_path):
    def broken(args):
        raise ValueError("a bug in the tool")

    tool = NoteTool()
    tool.tool = tool.tool.__class__("note", tool.tool.description, tool.tool.parameters, broken)
    with pytest.raises(ValueError, match="a bug in the tool"):
        run(tmp_path, [note("a"), ANSWER], tool)
    last = events(tmp_path / "run.jsonl")[-1]
    assert (last["type"], last["outcome"], last["steps"]) == ("run_end", "error", 1)
    assert "a bug in the tool" in [e for e in events(tmp_path / "run.jsonl") if e["type"] == "error"][0]["detail"]


def test_steps_are_overridable(tmp_path):
    from skillctl.runtime.stops import StopRun

    class Reviewed(StopRun):
        outcome, exit_code = "reviewed", 0

    class OneLook(Agent):
        """Stops after the first tool result it observes: a new ending is a subclass, not an edit."""

        def observe(self, call, outcome):
            super().observe(call, outcome)
            raise Reviewed(f"looked at {call.name}")

    tool = NoteTool()
    model = script_model(tmp_path, [note("a"), note("b"), ANSWER])
    result = OneLook(model, ToolBox([tool.tool])).run("SYSTEM", "TASK")
    assert (result.outcome, result.message, result.steps) == ("reviewed", "looked at note", 1)
    assert tool.calls == [{"text": "a"}] and [m.role for m in result.history] == ["system", "user", "assistant", "tool"]


def test_a_cancelled_run_stops_before_its_next_request(tmp_path):
    import threading

    cancel = threading.Event()
    tool = NoteTool()
    original = tool.tool.procedure

    def then_cancel(args):
        cancel.set()  # as another thread would, while the tool runs
        return original(args)

    tool.tool = tool.tool.__class__("note", tool.tool.description, tool.tool.parameters, then_cancel)
    result, model, _ = run(tmp_path, [note("a"), note("b"), ANSWER], tool, cancel=cancel)
    assert (result.outcome, result.exit_code, result.steps, len(model.sent)) == ("cancelled", 130, 1, 1)


def test_progress_reports_each_step(tmp_path):
    lines: list[str] = []
    run(tmp_path, [note("a"), {"tool": "nope", "arguments": {}}, ANSWER], NoteTool(), progress=lines.append)
    assert lines[0] == 'step 1: note {"text": "a"}'
    assert lines[1] == "step 2: nope {}" and lines[2].startswith("step 2: refused invalid call: error: unknown tool 'nope'")
    assert lines[3].startswith("step 3: answer (") and lines[3].endswith(" tokens in context)")


def test_tool_names_must_be_unique():
    with pytest.raises(ConfigError, match="duplicated: note"):
        ToolBox([NoteTool().tool, NoteTool().tool])


def test_the_old_name_of_tokens_used_still_reads_it_with_a_deprecation_warning() -> None:
    from skillctl.runtime.result import RunResult

    result = RunResult(outcome="answered", answer="a", steps=2, tokens_used=30, context_sizes=[10, 20])
    with pytest.warns(DeprecationWarning, match="use RunResult.tokens_used"):
        assert result.Z == 30
    assert result.to_dict()["tokens_used"] == result.to_dict()["Z"] == 30
