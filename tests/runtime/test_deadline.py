"""``max_seconds`` is one deadline for the whole run, enforced inside a step too: a command is
cut at the time left (alone or with others in one step), a reply that arrives late runs
nothing, and sub-agents spend their parent's time instead of getting their own."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from skillctl.runtime import RunSpec, run
from skillctl.runtime.deadline import Deadline
from skillctl.runtime.loop import Agent, Limits
from skillctl.runtime.subagent import subagent_tool
from skillctl.runtime.tools import ToolBox

from .helpers import NoteTool, note, script_model, write_script

SYSTEM = "You are a test agent."


class StepClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def slow(notes: NoteTool, clock: StepClock, seconds: float) -> NoteTool:
    """``notes`` whose every call "takes" ``seconds`` on ``clock``."""
    original = notes.tool.procedure

    def procedure(args):
        clock.now += seconds
        return original(args)

    notes.tool = notes.tool.__class__(notes.tool.name, notes.tool.description, notes.tool.parameters, procedure)
    return notes


def test_a_reply_that_arrives_after_the_deadline_runs_nothing(tmp_path: Path) -> None:
    clock = StepClock()
    model = script_model(tmp_path, [note("late"), {"answer": "never"}])
    inner = model.complete

    def slow_model(messages, tools):
        clock.now += 2.0  # the model answers after the run's time is over
        return inner(messages, tools)

    model.complete = slow_model
    notes = NoteTool()
    result = Agent(model, ToolBox([notes.tool]), limits=Limits(max_seconds=1.0), clock=clock).run(SYSTEM, "task")
    assert (result.outcome, result.exit_code, result.steps) == ("time_exhausted", 4, 1)
    assert notes.calls == []
    assert "before step 1's note call" in result.message


def test_a_sub_agent_spends_its_parents_time(tmp_path: Path) -> None:
    clock = StepClock()
    model = script_model(tmp_path, [
        note("parent"),  # 0.4 s of the parent's 1 s
        {"tool": "subagent", "arguments": {"task": "keep noting"}},
        *[note(f"child {i}") for i in range(5)],
        {"answer": "child done"},
        {"answer": "parent done"},
    ])
    notes = slow(NoteTool(), clock, 0.4)
    deadline = Deadline(1.0, clock=clock)
    sub = subagent_tool(model, SYSTEM, [notes.tool], limits=Limits(max_seconds=1.0), deadline=deadline)
    result = Agent(model, ToolBox([notes.tool, sub]), limits=Limits(max_seconds=1.0), clock=clock,
                   deadline=deadline).run(SYSTEM, "task")
    # With a second of its own the child would have made three calls; it had 0.6 s left.
    assert [c["text"] for c in notes.calls] == ["parent", "child 0", "child 1"]
    assert (result.outcome, result.steps) == ("time_exhausted", 2)
    assert "during step 2's subagent call" in result.message
    child = [m.content for m in result.history if m.role == "tool" and m.name == "subagent"]
    assert child and "without an answer (time_exhausted" in child[0]


# ----------------------------------------------------------------------------- real runs


LEFT_BEHIND = "ps -eo args= | grep -E '^(setsid )?sleep 60[0-9]' || true"


def docker_spec(tmp_path: Path, steps: list, seen: dict, **kw) -> RunSpec:
    """A run in a real container that, when the loop has ended, lists any ``sleep 60N`` still
    running there (the sandbox is still up then)."""

    def after_run(sandbox, result):
        seen["left"] = sandbox.exec(LEFT_BEHIND, timeout_s=30).stdout

    return RunSpec(task="Wait.", model=f"script:{write_script(tmp_path, steps)}", transcript=tmp_path / "t.jsonl",
                   approve="all", after_run=after_run, **kw)


def shell_records(path: Path) -> list[dict]:
    events = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return [o for e in events if e["type"] == "message" and e.get("details") for o in e["details"].get("output", [])]


def run_end(path: Path) -> dict:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()][-1]


@pytest.mark.requires_docker
def test_commands_asking_for_an_hour_stop_at_the_runs_deadline(tmp_path, agent_image):
    # Two commands of one step (run together), one of which leaves a setsid'd process behind.
    steps = [{"shell": ["sleep 600", "setsid sleep 601 & sleep 602"], "timeout_ms": 3_600_000}, {"answer": "never"}]
    seen: dict = {}
    began = time.monotonic()
    result = run(docker_spec(tmp_path, steps, seen, image=agent_image, max_seconds=5, timeout_ms=3_600_000))
    took = time.monotonic() - began
    assert (result.outcome, result.exit_code, result.answer) == ("time_exhausted", 4, None)
    assert took < 120, f"the run took {took:.0f} s"
    assert "during step 1's shell call" in result.message
    records = shell_records(tmp_path / "t.jsonl")
    assert [r["outcome"] for r in records] == [{"type": "timeout"}] * 2
    assert all(r.get("stopped_at_run_deadline") and r["timeout_s"] <= 5 for r in records), records
    end = run_end(tmp_path / "t.jsonl")
    assert (end["type"], end["outcome"]) == ("run_end", "time_exhausted") and "during step 1" in end["message"]
    assert seen["left"] == ""  # the commands' processes are gone, the setsid'd one too


@pytest.mark.requires_docker
def test_a_sub_agents_command_stops_at_its_parents_deadline(tmp_path, agent_image):
    steps = [
        {"shell": ["sleep 4"]},  # the parent spends at least 4 s of its 8
        {"tool": "subagent", "arguments": {"task": "Wait a long time."}},
        {"shell": ["sleep 600"], "timeout_ms": 3_600_000},  # the child's step
        {"answer": "child never"},
        {"answer": "parent never"},
    ]
    seen: dict = {}
    began = time.monotonic()
    result = run(docker_spec(tmp_path, steps, seen, image=agent_image, max_seconds=8, timeout_ms=3_600_000,
                             subagents=True))
    took = time.monotonic() - began
    assert (result.outcome, result.exit_code) == ("time_exhausted", 4)
    assert took < 120, f"the run took {took:.0f} s"
    assert "during step 2's subagent call" in result.message
    child = tmp_path / "t.subagents" / "subagent-1.jsonl"
    assert run_end(child)["outcome"] == "time_exhausted"
    [record] = shell_records(child)
    # What was left of the parent's 8 s, not 8 s of the child's own.
    assert record.get("stopped_at_run_deadline") and record["timeout_s"] <= 4, record
    assert seen["left"] == ""


@pytest.mark.requires_docker
def test_timeout_ms_is_the_most_a_command_may_ask_for(tmp_path, agent_image):
    steps = [{"shell": ["sleep 600"], "timeout_ms": 3_600_000}, {"answer": "went on"}]
    seen: dict = {}
    began = time.monotonic()
    result = run(docker_spec(tmp_path, steps, seen, image=agent_image, timeout_ms=1000))
    assert (result.outcome, result.answer) == ("answered", "went on")
    assert time.monotonic() - began < 120
    [record] = shell_records(tmp_path / "t.jsonl")
    assert record["outcome"] == {"type": "timeout"} and record["timeout_s"] == 1.0
    assert "stopped_at_run_deadline" not in record
    assert seen["left"] == ""
