"""``skillctl runs list|show``: past runs read back from the transcripts real runs wrote (the
local sandbox and the script model): steps, commands with exit codes and times, sub-agents,
tokens and outcome, as text and JSON; every way a RUN or a folder can be wrong is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.runtime import RunSpec, run
from skillctl.runtime.run_view import read_run
from skillctl.runtime.runs import list_runs

from .helpers import write_script

STEPS = [
    {"say": "look first", "shell": ["ls", "echo hi; exit 3"]},
    {"tool": "subagent", "arguments": {"task": "count files"}},
    {"shell": ["ls | wc -l"]},  # the sub-agent's
    {"answer": "one file"},  # the sub-agent's
    {"answer": "done: 1 file"},
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A folder of transcripts: two finished runs (one with a sub-agent), one cut short while
    running, and files that are not transcripts."""
    root = tmp_path_factory.mktemp("runs")
    work = tmp_path_factory.mktemp("work")
    (work / "notes.txt").write_text("a b\n")
    for name, steps, sub in (("first", STEPS, True), ("second", [{"answer": "quick"}], False)):
        result = run(RunSpec(task=f"the {name} task", model=f"script:{write_script(work, steps, f'{name}.yaml')}",
                             sandbox="local", allow_unsafe_local=True, subagents=sub, inputs=[work / "notes.txt"],
                             transcript=root / f"{name}.jsonl"))
        assert result.outcome == "answered", result.message
    lines = (root / "first.jsonl").read_text("utf-8").splitlines()
    (root / "nested").mkdir()
    # killed mid-run: no run_end, and its last line was cut while being written
    (root / "nested" / "cut.jsonl").write_text("\n".join(lines[:6]) + "\n" + lines[6][:20], "utf-8")
    (root / "results.jsonl").write_text('{"id": "a", "outcome": "answered"}\n')
    (root / "notes.txt").write_text("not a transcript")
    return root


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_list_finds_the_runs_newest_first_and_skips_what_is_not_a_run(folder):
    runs = list_runs(folder)
    # newest first by run_start; the cut copy of "first" started when it did, and sorts by id
    assert [r.id for r in runs] == ["second", "nested/cut", "first"]
    by_id = {r.id: r for r in runs}
    first = by_id["first"]
    assert (first.outcome, first.steps, first.task, first.model.startswith("script:")) == ("answered", 3, "the first task", True)
    assert first.tokens == sum(json.loads((folder / "first.jsonl").read_text().splitlines()[-1])["context_sizes"])
    assert by_id["nested/cut"].outcome == "unfinished" and by_id["nested/cut"].steps is None
    # the sub-agent's transcript is part of its parent's run, not a run of its own
    assert (folder / "first.subagents" / "subagent-1.jsonl").is_file() and len(runs) == 3


def test_list_command_as_a_table_and_as_json(folder):
    table = invoke("runs", "list", "--transcripts", str(folder))
    assert table.exit_code == 0, table.output
    head, *rows = table.stdout.splitlines()
    assert head.split() == ["RUN", "STARTED", "(UTC)", "OUTCOME", "STEPS", "TOKENS", "TIME", "TASK"]
    assert any(r.startswith("first ") and "answered" in r and r.endswith("the first task") for r in rows), rows
    data = json.loads(invoke("runs", "list", "--transcripts", str(folder), "--format", "json", "--limit", "2").stdout)
    assert len(data) == 2 and {"id", "transcript", "started", "outcome", "steps", "tokens", "task"} <= set(data[0])


def test_the_default_folder_is_where_run_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    empty = invoke("runs", "list")
    assert empty.exit_code == 0 and "no runs in " in empty.stderr and empty.stdout == ""
    script = write_script(tmp_path, [{"shell": ["true"]}, {"answer": "ok"}])
    done = invoke("run", "--model", f"script:{script}", "--sandbox", "local", "--allow-unsafe-local", "hello")
    assert done.exit_code == 0, done.output
    [entry] = json.loads(invoke("runs", "list", "--format", "json").stdout)
    assert entry["id"].startswith("run-") and entry["task"] == "hello"
    assert Path(entry["transcript"]).parent == tmp_path / "state" / "skillctl" / "runs"
    shown = invoke("runs", "show", entry["id"][:12])  # the start of an id is enough when only one has it
    assert shown.exit_code == 0 and "answer: ok" in shown.stdout


def test_show_tells_the_run_step_by_step(folder):
    result = invoke("runs", "show", "first", "--transcripts", str(folder))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("answered (exit 0)") and "task      the first task" in out
    view = read_run(folder / "first.jsonl")
    assert f"tokens    {view.tokens} sent over 3 steps" in out
    step1 = out[out.index("step 1 "):out.index("step 2 ")]
    assert "look first" in step1
    assert [line.split()[-4:-2] for line in step1.splitlines() if line.lstrip().startswith("$")] == [["exit", "0"], ["exit", "3"]]
    assert "sub-agent 1: answered in 2 steps" in out and "first.subagents/subagent-1.jsonl" in out
    assert out.rstrip().endswith("answer: done: 1 file")


def test_show_as_json(folder):
    data = json.loads(invoke("runs", "show", str(folder / "first.jsonl"), "--format", "json").stdout)
    assert (data["outcome"], data["exit_code"], data["answer"], data["task"]) == ("answered", 0, "done: 1 file", "the first task")
    assert len(data["steps"]) == 3 and data["tokens"]["total"] == sum(data["tokens"]["per_step"]) > 0
    commands = data["steps"][0]["calls"][0]["commands"]
    assert [(c["command"], c["exit_code"], c["status"]) for c in commands] == [("ls", 0, "exit 0"), ("echo hi; exit 3", 3, "exit 3")]
    assert all(c["duration_s"] > 0 for c in commands)
    sub = data["steps"][1]["calls"][0]["subagent"]
    assert (sub["number"], sub["outcome"], sub["steps"]) == (1, "answered", 2) and sub["tokens"] > 0
    assert data["unreadable_lines"] == 0 and data["errors"] == []


def test_an_unfinished_run_shows_what_it_has_and_counts_the_cut_line(folder):
    result = invoke("runs", "show", "nested/cut", "--transcripts", str(folder))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("unfinished  ") and "step 1 " in result.stdout
    assert "unfinished: no run_end yet" in result.stdout
    assert "warning: 1 line of " in result.stderr and "could not be read" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["show", "nope"], "no run 'nope' in {folder}; see: skillctl runs list"),
    (["show", "s"], None),  # starts "second" only: fine
    (["show", "gone.jsonl"], "no transcript file gone.jsonl; give a transcript file or a run id"),
    (["show", "{folder}/results.jsonl"], "{folder}/results.jsonl is not a skillctl transcript (its first event is not run_start)"),
    (["show", "notes"], "no run 'notes' in {folder}"),  # notes.txt is there, but only .jsonl files are runs
])
def test_a_run_that_is_not_there_is_one_line(folder, args, message):
    result = CliRunner().invoke(cli, ["runs", *[a.format(folder=folder) for a in args], "--transcripts", str(folder)])
    if message is None:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = result.stderr.splitlines()
    assert message.format(folder=folder) in line, line


def test_an_ambiguous_start_names_the_candidates(folder, tmp_path):
    for name in ("run-a1", "run-a2"):
        (tmp_path / f"{name}.jsonl").write_bytes((folder / "second.jsonl").read_bytes())
    result = CliRunner().invoke(cli, ["runs", "show", "run-a", "--transcripts", str(tmp_path)])
    assert result.exit_code == 1
    assert "'run-a' starts 2 run ids in" in result.stderr and "(run-a1, run-a2); give more of it" in result.stderr


def test_a_transcripts_folder_that_is_not_one_is_a_usage_error(tmp_path):
    (tmp_path / "file").write_text("x")
    for where in (tmp_path / "missing", tmp_path / "file"):
        result = CliRunner().invoke(cli, ["runs", "list", "--transcripts", str(where)])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
