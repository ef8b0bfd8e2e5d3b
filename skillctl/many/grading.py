"""Grading a run against its expectations, as the Agent Skills evals guide describes: PASS or
FAIL with evidence for each, scripts for what is mechanical, a model for the rest.

- An expectation with a ``check`` was run as a command in the run's own container after the
  agent finished (``RunSpec.checks``): exit 0 is PASS, and its output is the evidence.
- Any other is put to a judge model with what the run left behind — the task, the expected
  output, the outcome and final answer, the commands run, the files in the workspace with
  excerpts — and the judge must call the ``grade`` tool with ``{"verdict": "PASS"|"FAIL",
  "evidence": "…"}`` (``schemas/verdict.schema.json``; a JSON object in its reply is accepted
  too). Anything else — no call, invalid JSON, a wrong shape, a failed model call — is a FAIL
  whose evidence says what was wrong: a bad judge costs a grade, never the eval.

A scripted judge (``script:FILE``) answers in the order of the expectations, so grading is as
deterministic as the run.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from skillctl.errors import SkillctlError
from skillctl.messages import Message, system, user
from skillctl.schema import schema_problems, summarize
from skillctl.nesting import loads_json
from skillctl.protocols import Model, ModelReply, ToolSpec
from skillctl.runtime.result import CheckResult, RunResult
from skillctl.tokens import estimate_tokens

from .job import Expectation, Grading

GRADE_TOOL_NAME = "grade"
EVIDENCE_CHARS = 600  # of a check's output, kept as its evidence
MAX_COMMANDS = 40
MAX_FILES = 60
MAX_EXCERPTS = 8
EXCERPT_CHARS = 1500
MAX_FILE_READ = 256 * 1024

# Outcomes after which nothing in the container was checked: grading would only guess.
UNGRADED_OUTCOMES = ("cancelled", "interrupted", "sandbox_error")

JUDGE_INSTRUCTIONS = """\
You grade the work of an AI agent against one expectation.
You are given the task the agent had, what a good result looks like, and what the run left
behind: its outcome and final answer, the shell commands it ran, and the files in its working
folder with excerpts.
Require concrete evidence for a PASS: quote or point to the answer, a file or a command. If the
evidence is missing or only superficially there, the verdict is FAIL.
Answer by calling the tool `grade` exactly once with {"verdict": "PASS" or "FAIL", "evidence": "..."}."""


@lru_cache(maxsize=1)
def verdict_schema() -> dict[str, Any]:
    return json.loads(resources.files("skillctl.many").joinpath("schemas/verdict.schema.json").read_text("utf-8"))


def grade_tool() -> ToolSpec:
    return ToolSpec(GRADE_TOOL_NAME, "Record the verdict on the expectation, with the evidence that decides it.",
                    verdict_schema())


def graded(text: str, passed: bool, evidence: str) -> dict[str, Any]:
    """One entry of ``grading.json``'s ``expectations``."""
    return {"text": text, "passed": passed, "evidence": evidence}


def not_graded(grading: Grading, reason: str) -> list[dict[str, Any]]:
    """Every expectation FAILed with ``reason`` (a run that did not start or was stopped)."""
    return [graded(e.text, False, reason) for e in grading.expectations]


def summary(expectations: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``summary`` block of ``grading.json``."""
    passed = sum(1 for e in expectations if e["passed"])
    total = len(expectations)
    return {"passed": passed, "failed": total - passed, "total": total,
            "pass_rate": round(passed / total, 4) if total else 0.0}


# ------------------------------------------------------------------------------ checks


def check_verdict(check: CheckResult) -> tuple[bool, str]:
    res = check.result
    if res.outcome_type == "timeout":
        return False, f"the check timed out: {check.command}"
    output = (res.stdout + ("\n" + res.stderr if res.stderr else "")).strip()
    if len(output) > EVIDENCE_CHARS:
        output = output[:EVIDENCE_CHARS] + f" [… {len(output) - EVIDENCE_CHARS} characters cut]"
    return res.exit_code == 0, f"exit {res.exit_code}" + (f": {output}" if output else " (no output)")


# ------------------------------------------------------------------------------ the judge


def parse_verdict(reply: ModelReply) -> tuple[bool, str]:
    """(passed, evidence) from a judge's reply; a malformed reply is a FAIL saying why."""
    if reply.tool_calls:
        calls = [c for c in reply.tool_calls if c.name == GRADE_TOOL_NAME]
        if len(calls) != 1 or len(reply.tool_calls) != 1:
            names = ", ".join(c.name for c in reply.tool_calls)
            return False, f"malformed judge answer: expected one call of {GRADE_TOOL_NAME}, got: {names}"
        raw = calls[0].arguments
    else:
        raw = _strip_fence(reply.content)
        if not raw:
            return False, "malformed judge answer: it called no tool and wrote nothing"
    try:
        data = loads_json(raw)
    except ValueError:
        return False, f"malformed judge answer: not JSON: {_excerpt(raw, 200)}"
    problems = schema_problems(data, verdict_schema())
    if problems:
        return False, f"malformed judge answer: {summarize(problems)}"
    return data["verdict"] == "PASS", data["evidence"]


def _strip_fence(text: str) -> str:
    m = re.fullmatch(r"\s*```(?:json)?\s*\n(.*?)\n?```\s*", text or "", re.S)
    return (m.group(1) if m else (text or "")).strip()


def _excerpt(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


class Judge:
    """Grades string expectations with ``model``; counts the tokens it spent."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.tokens = 0

    def grade(self, evidence: str, expectation: str) -> tuple[bool, str]:
        messages = [system(JUDGE_INSTRUCTIONS), user(f"{evidence}\n\n<expectation>\n{expectation}\n</expectation>")]
        try:
            reply = self.model.complete(messages, [grade_tool()])
        except SkillctlError as exc:
            return False, f"the judge failed: {exc}"
        sent = reply.input_tokens if reply.input_tokens is not None else sum(m.tokens for m in messages)
        got = reply.output_tokens if reply.output_tokens is not None else estimate_tokens(
            reply.content + "".join(c.arguments for c in reply.tool_calls))
        self.tokens += sent + got
        return parse_verdict(reply)


# ------------------------------------------------------------------------------ what the judge sees


def _commands(history: Sequence[Message]) -> list[str]:
    found: list[str] = []
    for m in history:
        for call in m.tool_calls:
            try:
                args = call.parsed_arguments()
            except ValueError:
                continue
            commands = args.get("commands") if isinstance(args, dict) else None
            for c in commands if isinstance(commands, list) else []:
                if isinstance(c, str):
                    found.append(_excerpt(c, 300))
    return found[-MAX_COMMANDS:]


def _files(folder: Path | None) -> tuple[list[str], list[tuple[str, str]]]:
    if folder is None or not folder.is_dir():
        return [], []
    listing: list[str] = []
    excerpts: list[tuple[str, str]] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(folder).as_posix()
        size = path.stat().st_size
        if len(listing) < MAX_FILES:
            listing.append(f"{rel} ({size} bytes)")
        if len(excerpts) < MAX_EXCERPTS and size <= MAX_FILE_READ:
            try:
                text = path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # binary: the listing names it
            cut = f"\n[… {len(text) - EXCERPT_CHARS} more characters]" if len(text) > EXCERPT_CHARS else ""
            excerpts.append((rel, text[:EXCERPT_CHARS] + cut))
    return listing, excerpts


def run_evidence(task: str, expected_output: str, result: RunResult, files_dir: Path | None) -> str:
    """The text a judge grades from: the task, the expected output and what the run left."""
    parts = [f"<task>\n{task}\n</task>"]
    if expected_output:
        parts.append(f"<expected_output>\n{expected_output}\n</expected_output>")
    answer = result.answer if result.answer is not None else f"(no final answer: {result.message or result.outcome})"
    parts.append(f'<run outcome="{result.outcome}" steps="{result.steps}">')
    parts.append(f"<final_answer>\n{answer}\n</final_answer>")
    commands = _commands(result.history)
    parts.append("<commands>\n" + ("\n".join(f"$ {c}" for c in commands) or "(none)") + "\n</commands>")
    listing, excerpts = _files(files_dir)
    parts.append("<files>\n" + ("\n".join(listing) or "(none)") + "\n</files>")
    parts.extend(f'<file path="{rel}">\n{text}\n</file>' for rel, text in excerpts)
    parts.append("</run>")
    return "\n".join(parts)


# ------------------------------------------------------------------------------ one run


def grade_run(grading: Grading, task: str, result: RunResult, files_dir: Path | None,
              judge: Judge | None, *, no_judge: str = "not graded: no judge model") -> list[dict[str, Any]]:
    """Every expectation of ``grading`` graded for ``result`` (``grading.json``'s list).

    Check expectations take the run's check results in order; the others go to ``judge``
    (None when it could not be opened: they FAIL with ``no_judge`` as the evidence)."""
    if result.outcome in UNGRADED_OUTCOMES:
        return not_graded(grading, f"not graded: the run ended with outcome {result.outcome}")
    checks = list(result.checks)
    missing = "; ".join(result.warnings) or "the check did not run"
    evidence_text: str | None = None
    out: list[dict[str, Any]] = []
    for e in grading.expectations:
        if e.check is not None:
            out.append(graded(e.text, *check_verdict(checks.pop(0))) if checks else graded(e.text, False, missing))
            continue
        if judge is None:
            out.append(graded(e.text, False, no_judge))
            continue
        if evidence_text is None:
            evidence_text = run_evidence(task, grading.expected_output, result, files_dir)
        out.append(graded(e.text, *judge.grade(evidence_text, e.text)))
    return out


def needs_judge(expectations: Sequence[Expectation]) -> bool:
    return any(e.check is None for e in expectations)
