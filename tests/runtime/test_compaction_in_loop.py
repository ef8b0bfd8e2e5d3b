"""The loop with summarising compaction: the model's summary replaces the oldest turns."""

from __future__ import annotations

from pathlib import Path

from skillctl.context import SUMMARY_HEADER, Compactor
from skillctl.messages import tool_result, user, assistant, ToolCall
from skillctl.runtime.loop import Agent, Limits
from skillctl.runtime.summarize import model_summarizer, render
from skillctl.runtime.tools import ToolBox

from .helpers import NoteTool, note, script_model


def test_compaction_sends_a_summary_instead_of_dropping(tmp_path: Path) -> None:
    seen: list[int] = []

    def summarize(messages):
        seen.append(len(messages))
        return "SUMMARY: notes were taken"

    # Long assistant texts cannot be cleared (only tool results can), so pass 1 stops being
    # enough after a few steps and the compactor must summarise.
    steps = [{**note("x"), "say": f"thinking {i} " + "w" * 1600} for i in range(12)] + [{"answer": "done"}]
    model = script_model(tmp_path, steps)
    notes = NoteTool(result_size=400)
    agent = Agent(model, ToolBox([notes.tool]), limits=Limits(context_budget=2500, max_steps=20),
                  fitter=Compactor(summarize).fit)
    result = agent.run("system", "task")
    assert result.outcome == "answered"
    assert seen, "the summariser was never called"
    summarized = [req for req in model.sent if any(SUMMARY_HEADER.strip() in m["content"] for m in req)]
    assert summarized and any("SUMMARY: notes were taken" in m["content"] for m in summarized[-1])
    assert all(req[1] == {"role": "user", "content": "task"} for req in model.sent)  # first message kept


def test_model_summarizer_asks_the_model_with_the_rendered_history(tmp_path: Path) -> None:
    model = script_model(tmp_path, [{"answer": "  the summary  "}])
    call = ToolCall("call_1", "shell", '{"commands": ["ls"]}')
    history = [user("do it"), assistant("", (call,)), tool_result(call, "a.txt")]
    assert model_summarizer(model)(history) == "the summary"
    [request] = model.sent
    assert request[0]["role"] == "system" and request[1]["content"] == render(history)
    assert "[result of shell]\na.txt" in request[1]["content"] and 'shell({"commands": ["ls"]})' in request[1]["content"]
