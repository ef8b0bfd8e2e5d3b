"""Sub-agents: a fresh context, only the final answer returns, no grandchildren."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.runtime.loop import Agent, Limits
from skillctl.runtime.subagent import subagent_tool
from skillctl.runtime.tools import ToolBox

from .helpers import NoteTool, note, script_model

SYSTEM = "You are a test agent."


def test_child_starts_fresh_and_only_its_answer_returns(tmp_path: Path) -> None:
    # One script serves both: the parent delegates, the child's steps follow, then the parent's.
    model = script_model(tmp_path, [
        note("parent-secret-context"),
        {"tool": "subagent", "arguments": {"task": "count the notes"}},
        note("child-work", repeat=50),   # the child's step: a long result the parent never sees
        {"answer": "child says 3"},      # the child's answer
        {"answer": "parent done"},
    ])
    notes = NoteTool()
    sub = subagent_tool(model, SYSTEM, [notes.tool], transcript_dir=tmp_path)
    result = Agent(model, ToolBox([notes.tool, sub])).run(SYSTEM, "parent task")
    assert (result.outcome, result.answer) == ("answered", "parent done")
    # The child's first request: system + its task only, none of the parent's history.
    child_first = model.sent[2]
    assert [m["role"] for m in child_first] == ["system", "user"] and child_first[1]["content"] == "count the notes"
    # The parent's next request has the child's answer as the tool result, not its work.
    parent_after = model.sent[4]
    sub_result = [m for m in parent_after if m["role"] == "tool" and m.get("name") == "subagent"]
    assert [m["content"] for m in sub_result] == ["child says 3"]
    assert not any("child-work" in m["content"] for m in parent_after)
    assert (tmp_path / "subagent-1.jsonl").exists()


def test_child_without_answer_reports_its_outcome(tmp_path: Path) -> None:
    model = script_model(tmp_path, [
        {"tool": "subagent", "arguments": {"task": "loop"}},
        note("a"), note("b"),  # the child runs out of its 2 steps
        {"answer": "parent done"},
    ])
    notes = NoteTool()
    sub = subagent_tool(model, SYSTEM, [notes.tool], limits=Limits(max_steps=2))
    result = Agent(model, ToolBox([notes.tool, sub])).run(SYSTEM, "parent task")
    tool_msgs = [m for m in result.history if m.role == "tool" and m.name == "subagent"]
    assert "without an answer (budget_exhausted" in tool_msgs[0].content
    assert result.answer == "parent done"


def test_children_cannot_start_children(tmp_path: Path) -> None:
    model = script_model(tmp_path, [{"answer": "x"}])
    inner = subagent_tool(model, SYSTEM, [NoteTool().tool])
    with pytest.raises(ValueError, match="cannot start sub-agents"):
        subagent_tool(model, SYSTEM, [inner])


def test_invalid_subagent_arguments_run_nothing(tmp_path: Path) -> None:
    model = script_model(tmp_path, [
        {"tool": "subagent", "arguments": {"task": ""}},
        {"answer": "done"},
    ])
    sub = subagent_tool(model, SYSTEM, [NoteTool().tool])
    result = Agent(model, ToolBox([sub])).run(SYSTEM, "t")
    assert result.answer == "done" and len(model.sent) == 2  # no child request was made
    assert "invalid arguments for subagent" in [m for m in result.history if m.role == "tool"][0].content
