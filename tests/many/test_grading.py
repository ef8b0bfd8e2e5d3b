"""Grading: checks decide by exit status with their output as evidence; the judge must call
``grade`` with a verdict and evidence, and anything else it says is a graded FAIL naming what
was wrong — never a crash. The judge is the real scripted model."""

from __future__ import annotations

import pytest

from skillctl.messages import ToolCall, assistant
from skillctl.models.script import ScriptModel
from skillctl.protocols import ExecResult, ModelReply
from skillctl.many.grading import Judge, grade_run, parse_verdict, run_evidence, summary
from skillctl.many.job import Expectation, Grading
from skillctl.runtime.result import CheckResult, RunResult

from .conftest import verdict, write_yaml


def reply_call(arguments: str, name: str = "grade") -> ModelReply:
    return ModelReply(tool_calls=(ToolCall("c1", name, arguments),))


@pytest.mark.parametrize("reply, expected", [
    (reply_call('{"verdict": "PASS", "evidence": "count.txt holds 4"}'), (True, "count.txt holds 4")),
    (reply_call('{"verdict": "FAIL", "evidence": "no file"}'), (False, "no file")),
    (ModelReply(content='```json\n{"verdict": "PASS", "evidence": "quoted"}\n```'), (True, "quoted")),
    (ModelReply(content='{"verdict": "FAIL", "evidence": "plain JSON reply"}'), (False, "plain JSON reply")),
])
def test_a_structured_verdict_is_accepted(reply, expected):
    assert parse_verdict(reply) == expected


@pytest.mark.parametrize("reply, why", [
    (ModelReply(content="PASS, looks fine to me"), "malformed judge answer: not JSON: PASS, looks fine to me"),
    (ModelReply(content=""), "malformed judge answer: it called no tool and wrote nothing"),
    (reply_call('{"verdict": "MAYBE", "evidence": "x"}'), "malformed judge answer: top level: 'verdict' is 'MAYBE'; use one of PASS, FAIL"),
    (reply_call('{"verdict": "PASS"}'), "malformed judge answer: top level: missing 'evidence'"),
    (reply_call('{"verdict": "PASS", "evidence": ""}'), "malformed judge answer: top level: 'evidence' must not be empty"),
    (reply_call('{"verdict": "PASS", "evidence": "x", "score": 3}'), "malformed judge answer: top level: unknown key 'score'"),
    (reply_call('{"verdict": '), "malformed judge answer: not JSON: {\"verdict\":"),
    (reply_call('{"verdict": "PASS", "evidence": "x"}', name="shell"), "expected one call of grade, got: shell"),
])
def test_a_malformed_verdict_is_a_fail_saying_what_was_wrong(reply, why):
    passed, evidence = parse_verdict(reply)
    assert passed is False
    assert why in evidence


def run_result(outcome="answered", answer="4 words", checks=(), warnings=()) -> RunResult:
    history = [assistant("", (ToolCall("call_1", "shell", '{"commands": ["wc -w notes.txt"]}'),))]
    return RunResult(outcome, answer, 2, 1000, [400, 600], history=history, checks=list(checks), warnings=list(warnings))


def check(command: str, code: int | None, out: str = "", kind: str = "exit") -> CheckResult:
    return CheckResult(command, ExecResult(out, "", kind, code))


def test_checks_and_the_judge_grade_in_order_with_a_scripted_judge(tmp_path):
    judge = Judge(ScriptModel(write_yaml(tmp_path / "j.yaml", [verdict("PASS", "the answer says 4 words"),
                                                               {"answer": "I think it passes"}])))
    grading = Grading((Expectation("says 4"), Expectation("count.txt holds 4", "grep -qx 4 count.txt"),
                       Expectation("is polite"), Expectation("ran slow", "sleep 9")), expected_output="4")
    result = run_result(checks=[check("grep -qx 4 count.txt", 0, "4\n"), check("sleep 9", None, kind="timeout")])
    graded = grade_run(grading, "Count the words.", result, None, judge)
    assert graded == [
        {"text": "says 4", "passed": True, "evidence": "the answer says 4 words"},
        {"text": "count.txt holds 4", "passed": True, "evidence": "exit 0: 4"},
        {"text": "is polite", "passed": False, "evidence": "malformed judge answer: not JSON: I think it passes"},
        {"text": "ran slow", "passed": False, "evidence": "the check timed out: sleep 9"},
    ]
    assert summary(graded) == {"passed": 2, "failed": 2, "total": 4, "pass_rate": 0.5}
    assert judge.tokens > 0


def test_a_judge_that_fails_costs_a_grade_not_the_eval(tmp_path):
    judge = Judge(ScriptModel(write_yaml(tmp_path / "j.yaml", [verdict("PASS", "ok")])))
    grading = Grading((Expectation("a"), Expectation("b")))
    graded = grade_run(grading, "t", run_result(), None, judge)
    assert graded[0]["passed"] is True
    assert graded[1]["passed"] is False and graded[1]["evidence"].startswith("the judge failed: script ")


def test_checks_that_did_not_run_and_stopped_runs_fail_with_the_reason(tmp_path):
    grading = Grading((Expectation("c", "true"),))
    stopped = grade_run(grading, "t", run_result(warnings=["checks stopped at 'true': container gone"]), None, None)
    assert stopped == [{"text": "c", "passed": False, "evidence": "checks stopped at 'true': container gone"}]
    cancelled = grade_run(grading, "t", run_result(outcome="cancelled", answer=None), None, None)
    assert cancelled[0]["evidence"] == "not graded: the run ended with outcome cancelled"
    unjudged = grade_run(Grading((Expectation("x"),)), "t", run_result(), None, None, no_judge="no judge here")
    assert unjudged == [{"text": "x", "passed": False, "evidence": "no judge here"}]


def test_the_judge_sees_the_task_answer_commands_and_files(tmp_path):
    files = tmp_path / "out"
    (files / "sub").mkdir(parents=True)
    (files / "count.txt").write_text("4\n")
    (files / "sub" / "chart.png").write_bytes(b"\x89PNG\x00\xff")
    text = run_evidence("Count the words.", "4", run_result(), files)
    for part in ("<task>\nCount the words.\n</task>", "<expected_output>\n4\n</expected_output>",
                 '<run outcome="answered" steps="2">', "<final_answer>\n4 words\n</final_answer>",
                 "$ wc -w notes.txt", "count.txt (2 bytes)", "sub/chart.png (6 bytes)", '<file path="count.txt">\n4\n\n</file>'):
        assert part in text
    assert '<file path="sub/chart.png">' not in text  # binary: listed, not quoted
    none = run_evidence("t", "", run_result(outcome="budget_exhausted", answer=None), None)
    assert "(no final answer: budget_exhausted)" in none and "<files>\n(none)\n</files>" in none
