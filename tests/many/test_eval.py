"""``skillctl eval`` end to end: the documented workspace from real runs in real containers,
graded by real checks and a scripted judge; baselines (a published version, a snapshot
folder); the real ``openai`` client against the loopback model server; the report in a real
headless browser; and every rejection as one line with nothing left behind."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder

from model_server import ModelServer
from sandbox_fixtures import containers_of_this_process
from tools import require_tool

from .conftest import COUNT_WITH_SKILL, TALLY, tally_with_evals, verdict, write_yaml

LOCAL = ["--sandbox", "local", "--allow-unsafe-local"]


def invoke(*args: str):
    return CliRunner().invoke(cli, ["eval", *args], catch_exceptions=False)


def agent(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "agent.yaml", [{"shell": [COUNT_WITH_SKILL]}, {"answer": "notes.txt has 4 words"}])


def judge(tmp_path: Path) -> Path:
    # One verdict per text expectation of a run, in order: case 1 has one, case "greeting" one.
    return write_yaml(tmp_path / "judge.yaml", [verdict("PASS", "the answer says 'notes.txt has 4 words'")])


def load(path: Path):
    return json.loads(path.read_text("utf-8"))


@pytest.mark.requires_docker
def test_eval_writes_the_documented_workspace_from_runs_in_containers(tmp_path, agent_image, docker_client):
    skill = tally_with_evals(tmp_path)
    before = containers_of_this_process(docker_client)
    result = invoke(str(skill), "--model", f"script:{agent(tmp_path)}", "--judge", f"script:{judge(tmp_path)}", "-j", "2",
                    "--image", agent_image)
    assert result.exit_code == 0, result.output
    it = tmp_path / "skills" / "tally-workspace" / "iteration-1"  # beside the skill, as the guide lays it out
    assert sorted(p.name for p in it.iterdir()) == [".registries", "benchmark.json", "eval-1", "eval-greeting", "report.html"]
    with_, without = it / "eval-1" / "with_skill", it / "eval-1" / "without_skill"
    for run in (with_, without):
        assert {p.name for p in run.iterdir()} == {"outputs", "timing.json", "grading.json", "transcript.jsonl", "run.json"}
        timing = load(run / "timing.json")
        assert timing["total_tokens"] == load(run / "run.json")["Z"] > 0 and timing["duration_ms"] > 0
        assert load(run / "run.json")["outcome"] == "answered"
        assert json.loads((run / "transcript.jsonl").read_text().splitlines()[-1])["type"] == "run_end"
        assert not (run / "outputs" / "notes.txt").exists()  # the staged input, unchanged: not an output
    # With the skill, its script counted the staged file; without it, the same command failed.
    assert (with_ / "outputs" / "count.txt").read_text() == "4\n"
    assert load(with_ / "grading.json") == {
        "expectations": [
            {"text": "The answer gives the word count", "passed": True, "evidence": "the answer says 'notes.txt has 4 words'"},
            {"text": "count.txt holds 4", "passed": True, "evidence": "exit 0 (no output)"},
        ],
        "summary": {"passed": 2, "failed": 0, "total": 2, "pass_rate": 1.0},
    }
    assert load(without / "grading.json")["summary"] == {"passed": 1, "failed": 1, "total": 2, "pass_rate": 0.5}
    assert load(it / "eval-1" / "eval_metadata.json")["expectations"][1] == {"text": "count.txt holds 4",
                                                                              "check": "grep -qx 4 count.txt"}
    bench = load(it / "benchmark.json")
    summary = bench["run_summary"]
    assert set(summary) == {"with_skill", "without_skill", "delta"}
    assert summary["with_skill"]["pass_rate"] == {"mean": 1.0, "stddev": 0.0, "min": 1.0, "max": 1.0}
    assert summary["without_skill"]["pass_rate"]["mean"] == 0.75
    assert summary["delta"]["pass_rate"] == 0.25
    assert {"mean", "stddev"} <= set(summary["with_skill"]["tokens"]) and {"mean", "stddev"} <= set(summary["with_skill"]["time_seconds"])
    assert bench["metadata"]["configurations"]["with_skill"].startswith("tally@1.0.0")
    # The terminal table on stdout, progress per run on stderr.
    assert "mean pass rate  1.00 ± 0.00" in result.stdout and "delta +0.25" in result.stdout
    assert "eval-1 with_skill: answered in" in result.stderr and "2/2 expectations passed" in result.stderr
    page = (it / "report.html").read_text()
    assert page.count("<svg") == 2 and 'href="eval-1/with_skill/transcript.jsonl"' in page
    assert containers_of_this_process(docker_client) <= before


def test_runs_per_case_and_a_published_version_as_the_baseline(tmp_path):
    registry = tmp_path / "reg"
    with LocalRegistry(registry) as reg:
        reg.publish(prepare_folder(TALLY))  # the previous version, 1.0.0
    skill = tally_with_evals(tmp_path, version="1.1.0")
    result = invoke(str(skill), "--baseline", "1.0.0", "--runs-per-case", "2", "--registry", str(registry),
                    "--model", f"script:{agent(tmp_path)}", "--judge", f"script:{judge(tmp_path)}", "-j", "2",
                    "--workspace", str(tmp_path / "ws"), "--format", "json", *LOCAL)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    it = tmp_path / "ws" / "iteration-1"
    assert report["iteration"] == str(it) and report["benchmark"] == str(it / "benchmark.json")
    assert sorted(p.name for p in (it / "eval-1").iterdir()) == ["eval_metadata.json", "old_skill", "with_skill"]
    assert sorted(p.name for p in (it / "eval-1" / "old_skill").iterdir()) == ["run-1", "run-2"]
    assert (it / "eval-1" / "with_skill" / "run-2" / "grading.json").is_file()
    assert (it / "eval-1" / "with_skill" / "run-2" / "transcript.jsonl").stat().st_mode & 0o777 == 0o600
    bench = load(it / "benchmark.json")
    assert set(bench["run_summary"]) == {"with_skill", "old_skill", "delta"}
    assert bench["metadata"]["configurations"] == {"with_skill": f"tally@1.1.0 ({skill})", "old_skill": "tally@1.0.0 (registry)"}
    assert bench["metadata"]["runs_per_configuration"] == 2 and len(bench["runs"]) == 8
    # Both versions have the script: the check passes in both; nothing sets them apart.
    assert bench["run_summary"]["delta"]["pass_rate"] == 0.0
    # A second eval is the next iteration, never a rewrite of the first.
    again = invoke(str(skill), "--baseline", "1.0.0", "--registry", str(registry), "--model", f"script:{agent(tmp_path)}",
                   "--judge", f"script:{judge(tmp_path)}", "--workspace", str(tmp_path / "ws"), *LOCAL)
    assert again.exit_code == 0, again.output
    assert (tmp_path / "ws" / "iteration-2" / "benchmark.json").is_file()


def test_a_snapshot_folder_as_the_baseline(tmp_path):
    skill = tally_with_evals(tmp_path)
    snapshot = tmp_path / "skills" / "tally-workspace" / "skill-snapshot"  # the guide's name for it
    shutil.copytree(skill, snapshot)
    (snapshot / "scripts" / "tally.py").write_text("import sys\nprint('broken')\nsys.exit(1)\n")
    result = invoke(str(skill), "--baseline", str(snapshot), "--model", f"script:{agent(tmp_path)}",
                    "--judge", f"script:{judge(tmp_path)}", *LOCAL)
    assert result.exit_code == 0, result.output
    it = tmp_path / "skills" / "tally-workspace" / "iteration-1"
    old = load(it / "eval-1" / "old_skill" / "grading.json")
    assert [e["passed"] for e in old["expectations"]] == [True, False]  # the old script did not count
    assert load(it / "benchmark.json")["run_summary"]["delta"]["pass_rate"] == 0.25


def test_the_real_openai_client_drives_the_agent_and_the_judge(tmp_path, model_server):
    skill = tally_with_evals(tmp_path, cases=[{"id": 1, "prompt": "How many words are in notes.txt?",
                                               "files": ["evals/files/notes.txt"], "expectations": ["It says 4"]}])
    with ModelServer() as judge_server:  # the judge has an endpoint of its own
        for _config in ("with_skill", "without_skill"):  # -j 1: the runs and their grading go in this order
            model_server.reply(tool_calls=[("shell", json.dumps({"commands": ["wc -w < notes.txt"]}))], input_tokens=900)
            model_server.reply("There are 4 words.", input_tokens=1000)
            judge_server.reply(tool_calls=[("grade", json.dumps({"verdict": "PASS", "evidence": "'There are 4 words.'"}))])
        result = invoke(str(skill), "--model", "openai-chat:test-model", "--base-url", model_server.base_url,
                        "--judge", "openai-chat:judge-model", "--judge-base-url", judge_server.base_url, "-j", "1", *LOCAL)
        assert result.exit_code == 0, result.output
        judged = [r.body for r in judge_server.requests]
    it = tmp_path / "skills" / "tally-workspace" / "iteration-1"
    for config in ("with_skill", "without_skill"):
        grading = load(it / "eval-1" / config / "grading.json")
        assert grading["expectations"] == [{"text": "It says 4", "passed": True, "evidence": "'There are 4 words.'"}]
        assert load(it / "eval-1" / config / "timing.json")["total_tokens"] == 1900  # the API's own counts
    assert model_server.pending == 0 and model_server.count() == 4
    assert len(judged) == 2 and {b["model"] for b in judged} == {"judge-model"}
    assert [t["function"]["name"] for t in judged[0]["tools"]] == ["grade"]
    prompt = judged[0]["messages"][-1]["content"]
    assert "<final_answer>\nThere are 4 words.\n</final_answer>" in prompt and "$ wc -w < notes.txt" in prompt
    assert "<expectation>\nIt says 4\n</expectation>" in prompt


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_report_renders_in_a_real_headless_browser(tmp_path):
    require_tool("chromium")  # scripts/setup.sh --tests installs it
    chromium = shutil.which("chromium")
    skill = tally_with_evals(tmp_path)
    result = invoke(str(skill), "--model", f"script:{agent(tmp_path)}", "--judge", f"script:{judge(tmp_path)}", *LOCAL)
    assert result.exit_code == 0, result.output
    page = tmp_path / "skills" / "tally-workspace" / "iteration-1" / "report.html"
    shot = tmp_path / "report.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}"]
    done = subprocess.run([chromium, *flags, "--window-size=1280,1600", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.is_file(), done.stderr
    assert png_size(shot) == (1280, 1600)
    assert shot.stat().st_size > 30_000  # a blank page is a few kilobytes; this one has tables and two charts
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert dom.count("<svg") == 2 and "Pass rate per case" in dom and "PASS" in dom and "eval-greeting" in dom


# ------------------------------------------------------------------------------ rejections


def test_rejections_are_one_line_and_leave_nothing_behind(tmp_path):
    model = f"script:{agent(tmp_path)}"
    skill = tally_with_evals(tmp_path)
    ws = tmp_path / "skills" / "tally-workspace"

    cases = [
        ([str(tmp_path / "nowhere")], "is not a skill folder (no such directory)"),
        ([str(skill), "--baseline", "not-a-version"], "--baseline 'not-a-version' is neither 'none', a version of tally nor a skill folder"),
        ([str(skill), "--baseline", "9.9.9", "--registry", str(tmp_path / "reg")], "tally"),
        (["no-such-skill", "--registry", str(tmp_path / "reg")], "no-such-skill"),
    ]
    (tmp_path / "reg").mkdir()
    with LocalRegistry(tmp_path / "reg") as reg:
        reg.publish(prepare_folder(TALLY))
    for args, message in cases:
        result = invoke(*args, "--model", model, *LOCAL)
        assert result.exit_code == 1, (args, result.output)
        assert message in result.stderr and result.stderr.count("\n") == 1, (args, result.stderr)
        assert not ws.exists(), args
    (skill / "evals" / "evals.json").write_text('{"skill_name": "tally", "evals": [{"id": 1}]}')
    bad = invoke(str(skill), "--model", model, *LOCAL)
    assert bad.exit_code == 1 and "evals[0]: missing 'prompt'" in bad.stderr and not ws.exists()
    tally_with_evals(tmp_path / "again")
    skill = tmp_path / "again" / "skills" / "tally"
    broken_model = invoke(str(skill), "--model", f"script:{tmp_path / 'missing.yaml'}", *LOCAL)
    assert broken_model.exit_code == 1 and "does not exist" in broken_model.stderr
    assert not (tmp_path / "again" / "skills" / "tally-workspace").exists()
    usage = CliRunner().invoke(cli, ["eval", str(skill), "--model", model, "--runs-per-case", "0"])
    assert usage.exit_code == 2
