"""The one place schema errors are worded: every problem, located, one line each — and the
readers that used to stop at the first problem now name them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.audit import load_rules
from skillctl.errors import ConfigError
from skillctl.messages import ToolCall
from skillctl.runtime.tools import Tool, ToolBox, ToolOutcome
from skillctl.schema import format_path, schema_problems, summarize, validator

SCHEMA = {
    "type": "object",
    "properties": {
        "steps": {"type": "array", "items": {"type": "object", "properties": {"answer": {"type": "string"}}}},
        "limit": {"type": "integer", "minimum": 1},
    },
    "required": ["steps"],
}


def test_every_problem_is_reported_ordered_by_place() -> None:
    doc = {"limit": 0, "steps": [{"answer": 1}, {}, {"answer": 2}] + [{}] * 8 + [{"answer": 3}]}
    assert schema_problems(doc, SCHEMA) == [
        "top level: 'limit' must be at least 1",
        "steps[0]: 'answer' must be a string",
        "steps[2]: 'answer' must be a string",
        "steps[11]: 'answer' must be a string",  # numeric order: 11 after 2
    ]


def test_places_are_written_for_the_reader() -> None:
    doc = {"steps": [{"answer": 1}]}
    assert schema_problems(doc, SCHEMA, wording=validator) == ["steps[0].answer: 1 is not of type 'string'"]
    assert schema_problems(doc, SCHEMA, wording=validator, pointer=True) == ["steps/0/answer: 1 is not of type 'string'"]
    assert schema_problems(doc, SCHEMA, wording=validator, prefix="trust") == ["trust.steps[0].answer: 1 is not of type 'string'"]
    assert schema_problems([], SCHEMA, wording=validator, top="arguments") == ["arguments: [] is not of type 'object'"]
    assert format_path([]) == "top level" and format_path(["a", 0, "b"]) == "a[0].b"


def test_a_long_list_of_problems_stays_one_capped_line() -> None:
    line = summarize([f"p{i}: bad" for i in range(9)])
    assert "\n" not in line and line.endswith("p5: bad; and 3 more")


def test_a_rules_file_with_two_problems_names_both(tmp_path: Path) -> None:
    path = tmp_path / "extra.yaml"
    path.write_text("schema: skillctl-audit-rules/1\nrules: [{id: ACME001, title: t, severity: severe, category: x1, why: 0123456789,"
                    " fix: fixit, match: {pattern: x}, extra: 1}]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_rules([path])
    assert "rules/0/severity" in str(err.value) and "'extra' was unexpected" in str(err.value)


def test_a_tool_call_with_two_bad_arguments_hears_of_both() -> None:
    params = {"type": "object", "properties": {"text": {"type": "string"}, "repeat": {"type": "integer", "minimum": 1}}}
    box = ToolBox([Tool("note", "d", params, lambda args: ToolOutcome("ran"))])
    out = box.call(ToolCall(id="c1", name="note", arguments='{"text": 5, "repeat": 0}'))
    assert out.ok is False
    assert out.text.startswith("error: invalid arguments for note: ") and out.text.endswith(". Nothing was run.")
    assert "repeat: 0 is less than the minimum of 1" in out.text and "text: 5 is not of type 'string'" in out.text
