"""``skillctl run``, ``catalog`` and ``export`` through the real command line: a real registry
folder, the real engine, the script model. Answer on stdout, progress on stderr, exit codes per
outcome, inputs staged, and no container left behind — whether the run answered, failed, or was
interrupted with Ctrl-C or SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.errors import CONTEXT_TOO_LONG_MESSAGE
from skillctl.runtime.transcript import rebuild_requests
from skillctl.sandbox.reaper import Owner
from skillctl.sandbox.settings import LABEL_MANAGED, LABEL_OWNER
from tools import MEASURE

REPO = Path(__file__).resolve().parents[1]
DEMO_SCRIPT = REPO / "examples" / "demo" / "demo.script.yaml"
NOTES = REPO / "examples" / "demo" / "notes.txt"
DEMO_ANSWER = yaml.safe_load(DEMO_SCRIPT.read_text("utf-8"))["steps"][-1]["answer"]


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Path:
    """The example skills published through the CLI into a fresh registry folder."""
    path = tmp_path_factory.mktemp("cli-run") / "reg"
    result = CliRunner().invoke(cli, ["publish", str(REPO / "skills"), "--registry", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def env(registry, tmp_path) -> dict[str, str]:
    """Isolated user folders; the registry from the fixture; no model endpoint from outside."""
    return {
        "SKILLCTL_REGISTRY": str(registry),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OPENAI_BASE_URL": "",
        "OPENAI_API_KEY": "",
        "SKILLCTL_MODEL": "",
    }


def script(tmp_path: Path, steps: list, name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"steps": steps}, sort_keys=False), "utf-8")
    return f"script:{path}"


def invoke(env, *args: str):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def owned_containers(docker_client, pid: int) -> set[str]:
    """Ids of skillctl containers whose owner label names process ``pid``."""
    found = set()
    for c in docker_client.api.containers(all=True, filters={"label": [f"{LABEL_MANAGED}=1"]}):
        owner = Owner.parse((c.get("Labels") or {}).get(LABEL_OWNER, ""))
        if owner is not None and owner.pid == pid:
            found.add(c["Id"])
    return found


# --------------------------------------------------------------------------- in-process runs


@pytest.mark.requires_docker
def test_demo_answer_on_stdout_progress_on_stderr(env, tmp_path, agent_image, docker_client):
    before = owned_containers(docker_client, os.getpid())
    transcript = tmp_path / "t.jsonl"
    result = invoke(env, "run", "--skill", "tally", "--input", str(NOTES), "--model", f"script:{DEMO_SCRIPT}",
                    "--transcript", str(transcript), "How many words are in notes.txt?")
    assert result.exit_code == 0, result.output
    assert result.stdout == DEMO_ANSWER + "\n"
    err = result.stderr
    for expected in ("sandbox started (docker)", "staged 1 input(s) into /workspace", "loaded tally@1.0.0 -> /skills/tally/",
                     "step 1: shell", "  exit 0 in ", "step 5: answer (", "outcome: answered; 5 steps; "):
        assert expected in err, (expected, err)
    assert "44" in DEMO_ANSWER
    # The tally script really ran on the staged file inside the container.
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    outputs = [o for e in events if e["type"] == "message" and e.get("details") for o in e["details"].get("output", [])]
    tally_json = [o for o in outputs if "--json" in o["command"]][0]
    assert json.loads(tally_json["stdout"])["words"] == 44
    assert owned_containers(docker_client, os.getpid()) <= before


@pytest.mark.requires_docker
def test_format_json_reports_outcome_answer_steps_and_cost(env, tmp_path, agent_image, docker_client):
    transcript = tmp_path / "t.jsonl"
    result = invoke(env, "run", "--skill", "tally", "--input", str(NOTES), "--model", f"script:{DEMO_SCRIPT}",
                    "--transcript", str(transcript), "--format", "json", "How many words?")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {"outcome", "answer", "steps", "tokens_used", "Z", "context_sizes", "transcript"} <= set(report)
    assert (report["outcome"], report["answer"], report["steps"]) == ("answered", DEMO_ANSWER, 5)
    assert len(report["context_sizes"]) == 5 and report["tokens_used"] == report["Z"] == sum(report["context_sizes"])
    assert report["context_sizes"] == sorted(report["context_sizes"])  # the context only grows here
    assert report["transcript"] == str(transcript)
    assert len(rebuild_requests(transcript)) == 5
    assert "outcome:" not in result.stdout  # the summary line is progress: stderr


EXIT_CASES = {
    "budget_exhausted": (3, ["--max-steps", "1"], [{"shell": ["true"]}, {"answer": "x"}]),
    "invalid_calls": (6, [], [{"tool": "nope", "arguments": {}}] * 3 + [{"answer": "x"}]),
    "model_error": (8, [], [{"shell": ["true"]}]),
    "time_exhausted": (4, ["--max-seconds", "1"], [{"shell": ["sleep 1.5"]}, {"answer": "x"}]),
    "tokens_exhausted": (5, ["--max-tokens", "1200"], [{"shell": ["seq 1 300"]}] * 5 + [{"answer": "x"}]),
}


@pytest.mark.requires_docker
@pytest.mark.parametrize("outcome", sorted(EXIT_CASES))
def test_each_outcome_has_its_exit_code_and_removes_the_container(outcome, env, tmp_path, agent_image, docker_client):
    code, options, steps = EXIT_CASES[outcome]
    before = owned_containers(docker_client, os.getpid())
    result = invoke(env, "run", "--model", script(tmp_path, steps), "--transcript", str(tmp_path / "t.jsonl"),
                    "--format", "json", *options, "Do it.")
    assert result.exit_code == code, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == outcome and report["answer"] is None and report["message"]
    if outcome == "tokens_exhausted":
        assert report["Z"] <= 1200 and report["steps"] >= 1
    assert owned_containers(docker_client, os.getpid()) <= before


@pytest.mark.requires_docker
def test_max_seconds_ends_the_run_inside_a_command_that_asked_for_an_hour(env, tmp_path, agent_image):
    # This ran 92 s under --max-seconds 10: the command's own timeout was the only limit inside a step.
    steps = [{"shell": ["sleep 600"], "timeout_ms": 3_600_000}, {"answer": "never"}]
    began = time.monotonic()
    result = invoke(env, "run", "--model", script(tmp_path, steps), "--transcript", str(tmp_path / "t.jsonl"),
                    "--max-seconds", "5", "--timeout-ms", "3600000", "Wait.")
    took = time.monotonic() - began
    assert result.exit_code == 4, result.output
    assert took < 120, f"the run took {took:.0f} s"
    assert "outcome: time_exhausted" in result.stderr and "during step 1's shell call" in result.stderr


@pytest.mark.requires_docker
def test_context_too_long_exit_code_and_message(env, tmp_path, agent_image, docker_client):
    before = owned_containers(docker_client, os.getpid())
    result = invoke(env, "run", "--model", script(tmp_path, [{"answer": "x"}]), "--transcript", str(tmp_path / "t.jsonl"),
                    "--context-budget", "1000", "word " * 5000)
    assert result.exit_code == 7, result.output
    assert result.stdout == ""
    assert CONTEXT_TOO_LONG_MESSAGE in result.stderr and "Traceback" not in result.stderr
    assert owned_containers(docker_client, os.getpid()) <= before


@pytest.mark.requires_docker
def test_inputs_are_staged_as_files_the_agent_owns(env, tmp_path, agent_image):
    folder = tmp_path / "project"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "data.csv").write_text("a,b\n1,2\n", "utf-8")
    run_sh = folder / "run.sh"
    run_sh.write_text("#!/bin/sh\necho ran\n", "utf-8")
    run_sh.chmod(0o755)
    steps = [
        {"shell": ["cd /workspace && find . -type f -printf '%P %m %U\\n' | sort"]},
        {"shell": ["cat /workspace/project/sub/data.csv", "/workspace/project/run.sh",
                   "echo out > /workspace/project/result.txt && echo more >> /workspace/notes.txt"]},
        {"answer": "done"},
    ]
    transcript = tmp_path / "t.jsonl"
    result = invoke(env, "run", "--input", str(NOTES), "--input", str(folder), "--model", script(tmp_path, steps),
                    "--transcript", str(transcript), "Look at the inputs.")
    assert result.exit_code == 0, result.output
    tools = [json.loads(line) for line in transcript.read_text().splitlines()]
    outs = [o for e in tools if e["type"] == "message" and e.get("details") for o in e["details"]["output"]]
    assert outs[0]["stdout"] == "notes.txt 644 1000\nproject/run.sh 755 1000\nproject/sub/data.csv 644 1000\n"
    assert outs[1]["stdout"] == "a,b\n1,2\n" and outs[2]["stdout"] == "ran\n"
    assert outs[3]["outcome"] == {"type": "exit", "exit_code": 0}, outs[3]  # the agent may write its inputs


@pytest.mark.requires_docker
@pytest.mark.parametrize("keep", [False, True], ids=["default", "keep-background"])
def test_a_background_service_outlives_its_step_only_when_asked(keep, env, tmp_path, agent_image):
    # The agent's own commands cannot kill the keep-alive either: the run still answers.
    steps = [
        {"shell": ["nohup sleep 4321 >/dev/null 2>&1 & echo started"]},
        {"shell": ["ps -eo args= | grep -c '^[s]leep 4321' || true"]},
        {"shell": ["pkill -x sleep; kill -9 -1; echo tried"]},
        {"shell": ["echo still working"]},
        {"answer": "done"},
    ]
    transcript = tmp_path / "t.jsonl"
    flags = ["--keep-background"] if keep else []
    result = invoke(env, "run", *flags, "--model", script(tmp_path, steps), "--transcript", str(transcript), "Serve.")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    outs = [o for e in events if e["type"] == "message" and e.get("details") for o in e["details"]["output"]]
    assert [o["stdout"] for o in outs[:2]] == ["started\n", "1\n" if keep else "0\n"]
    # kill -9 -1 killed its own command's supervisor (137), and nothing else that matters.
    assert outs[2]["outcome"] == {"type": "exit", "exit_code": 137}
    assert outs[3]["stdout"] == "still working\n"


@dataclass
class MeasuredRun:
    code: int
    stdout: str
    stderr: str
    peak_mib: float  # the skillctl process's own peak resident memory
    seconds: float
    pid: int


def measured_run(env, tmp_path: Path, steps: list, *args: str) -> MeasuredRun:
    """``skillctl run --model SCRIPT ARGS…`` in a process of its own, measured."""
    began = time.monotonic()
    measured = tmp_path / "measured"
    with open(tmp_path / "stdout", "w+") as out, open(tmp_path / "stderr", "w+") as err:
        code = subprocess.run(
            [sys.executable, "-c", MEASURE, str(measured), sys.executable, "-c", "from skillctl.cli import main; main()",
             "run", "--model", script(tmp_path, steps), *args],
            stdout=out, stderr=err, env={**os.environ, **env},
        ).returncode
        out.seek(0), err.seek(0)
        pid, peak_kib = map(int, measured.read_text().split())
        return MeasuredRun(code, out.read(), err.read(), peak_kib / 1024, time.monotonic() - began, pid)  # KiB on Linux


@pytest.mark.requires_docker
def test_a_flood_of_concurrent_commands_keeps_memory_and_the_transcript_bounded(env, tmp_path, agent_image):
    # Eight commands at once, each printing 11 MB of control bytes on stdout and on stderr, twice:
    # this made a 2 GB transcript and 4.3 GB of memory in skillctl.
    flood = "head -c 11000000 /dev/zero; head -c 11000000 /dev/zero | tr '\\0' '\\33' >&2"
    steps = [{"shell": [flood] * 8}, {"shell": [flood] * 8}, {"answer": "survived"}]
    transcript = tmp_path / "t.jsonl"
    run = measured_run(env, tmp_path, steps, "--transcript", str(transcript), "Flood.")
    assert (run.code, run.stdout) == (0, "survived\n"), run.stderr[-2000:]
    assert run.peak_mib < 400, f"peak memory of the run: {run.peak_mib:.0f} MiB"
    size_mib = transcript.stat().st_size / 2**20
    assert size_mib < 20, f"transcript: {size_mib:.0f} MiB"
    text = transcript.read_text("utf-8")
    assert "\\u0000" not in text and "\\u001b" not in text  # control bytes are pictures, not 6-byte escapes
    events = [json.loads(line) for line in text.splitlines()]
    outs = [o for e in events if e["type"] == "message" and e.get("details") for o in e["details"]["output"]]
    assert len(outs) == 16 and all(o["outcome"] == {"type": "exit", "exit_code": 0} for o in outs)
    for o in outs:
        # Each stream's capture shrank (16 streams share a step's capture), and the transcript
        # keeps a share of the call's cap; both say so.
        assert o["stdout_dropped"] > 0 and o["stdout_not_in_transcript"] > 0 and o["stderr_not_in_transcript"] > 0
        assert "characters of this output are not in the transcript" in o["stdout"]
        assert o["stdout"].startswith("␀") and o["stderr"].startswith("␛")
    model_read = [e["message"]["content"] for e in events if e["type"] == "message" and e["message"]["role"] == "tool"]
    assert all("bytes of stdout exceeded the capture cap" in t for t in model_read)


def leftovers_beside(folder: Path) -> list[str]:
    """Anything a copy to ``folder`` left next to it (its staging folder, say)."""
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}"))


@pytest.mark.requires_docker
def test_a_workspace_over_the_output_cap_keeps_the_answer_memory_flat_and_the_sandbox_free(
        env, tmp_path, agent_image, docker_client):
    # 600 MB in /workspace: this hung ~188 s (the archive stream was never closed, so the daemon
    # kept the container locked), then failed with a traceback, exit 1 and no answer.
    steps = [{"shell": ["head -c 300000000 /dev/zero > a.bin && head -c 300000000 /dev/zero > b.bin"]},
             {"answer": "the answer"}]
    out = tmp_path / "out"
    run = measured_run(env, tmp_path, steps, "--transcript", str(tmp_path / "t.jsonl"), "--output", str(out), "Fill.")
    assert (run.code, run.stdout) == (10, "the answer\n"), run.stderr[-2000:]
    # a.bin (300 MB) went through before b.bin passed the cap: streamed, never held.
    assert run.peak_mib < 250, f"peak memory of the run: {run.peak_mib:.0f} MiB"
    assert run.seconds < 120, f"the run took {run.seconds:.0f} s"
    assert "outcome: answered" in run.stderr
    assert "error: the workspace was not copied to" in run.stderr and "exceeds 512 MiB" in run.stderr
    assert "Traceback" not in run.stderr
    assert not out.exists() and leftovers_beside(out) == []  # nothing half-written
    assert owned_containers(docker_client, run.pid) == set()


@pytest.mark.requires_docker
def test_hard_links_setuid_files_and_special_files_in_the_output(env, tmp_path, agent_image):
    steps = [{"shell": ["echo data > a && ln a b && mkdir d && ln a d/c && echo x > s && chmod 6755 s"
                        " && ln -s /etc/passwd link && mkfifo fifo && touch \"$(printf 'bad\\377name')\""]},
             {"answer": "copied"}]
    out = tmp_path / "out"
    result = invoke(env, "run", "--model", script(tmp_path, steps), "--transcript", str(tmp_path / "t.jsonl"),
                    "--output", str(out), "--format", "json", "Copy.")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert sorted(report["outputs"]) == ["a", "b", "d/c", "s"] and report["output_error"] is None
    # Each name is a file of its own with the data (today one name was silently dropped).
    inodes = {(out / n).stat().st_ino for n in ("a", "b", "d/c")}
    assert len(inodes) == 3 and all((out / n).read_text() == "data\n" and (out / n).stat().st_nlink == 1
                                    for n in ("a", "b", "d/c"))
    assert (out / "s").stat().st_mode & 0o7777 == 0o755  # setuid and setgid dropped, executable kept
    assert not (out / "link").exists() and not (out / "link").is_symlink() and not (out / "fifo").exists()
    notes = report["output_notes"]
    assert "2 hard links copied as separate files: b (= a), d/c (= a)" in notes
    assert "1 file written without setuid/setgid bits: s" in notes
    assert "3 entries not copied: bad\\xffname (name is not UTF-8), fifo (FIFO), link (symbolic link)" in notes
    assert "output: 2 hard links copied as separate files" in result.stderr


@pytest.mark.requires_docker
def test_the_agents_home_is_outside_the_workspace_and_its_caches_never_come_back(env, tmp_path, agent_image):
    # HOME was /workspace: onnxruntime's ~/.cache/… came back with --output.
    steps = [{"shell": ["mkdir -p ~/.cache/onnxruntime ~/.config && echo model > ~/.cache/onnxruntime/m.bin"
                        " && echo cfg > ~/.config/tool.ini && head -c 1000000 /dev/zero > ~/.cache/big"
                        " && python3 -c 'import os; print(os.path.expanduser(\"~\"))' > result.txt"
                        " && stat -c '%a %u' \"$HOME\" >> result.txt && cat ~/.cache/onnxruntime/m.bin >> result.txt"]},
             {"answer": "done"}]
    out = tmp_path / "out"
    result = invoke(env, "run", "--model", script(tmp_path, steps), "--transcript", str(tmp_path / "t.jsonl"),
                    "--output", str(out), "--format", "json", "Cache.")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["outputs"] == ["result.txt"]
    assert sorted(p.name for p in out.iterdir()) == ["result.txt"]
    assert (out / "result.txt").read_text() == "/home/agent\n700 1000\nmodel\n"


@pytest.mark.requires_docker
def test_too_many_files_in_the_output_keeps_the_answer(env, tmp_path, agent_image):
    steps = [{"shell": ["mkdir many && cd many && seq 1 10001 | xargs touch"]}, {"answer": "the answer"}]
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("was here before", "utf-8")
    result = invoke(env, "run", "--model", script(tmp_path, steps), "--transcript", str(tmp_path / "t.jsonl"),
                    "--output", str(out), "Make files.")
    assert (result.exit_code, result.stdout) == (10, "the answer\n"), result.output
    assert "has more than 10000 entries; the limit is 10000" in result.stderr and "outcome: answered" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]  # as it was


def test_bad_inputs_are_one_line_errors(env, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "x").mkdir(parents=True)
    (b / "x").mkdir(parents=True)
    cases = [
        (["--model", "nope:thing"], 1, "unknown model 'nope:thing'"),
        (["--model", f"script:{tmp_path / 'missing.yaml'}"], 1, "does not exist"),
        (["--model", script(tmp_path, [{"answer": "x"}]), "--input", str(tmp_path / "nothing")], 2, "does not exist"),
        (["--model", script(tmp_path, [{"answer": "x"}]), "--sandbox", "local"], 1, "allow_unsafe_local"),
        (["--model", script(tmp_path, [{"answer": "x"}]), "--sandbox", "local", "--allow-unsafe-local",
          "--keep-background"], 1, "keep_background is not available in the local sandbox"),
        (["--model", script(tmp_path, [{"answer": "x"}]), "--skill", "no-such-skill"], 1, "no skill 'no-such-skill'"),
        (["--model", script(tmp_path, [{"answer": "x"}]), "--input", str(a / "x"), "--input", str(b / "x")], 1,
         "two inputs are named x"),
    ]
    bad_script = tmp_path / "bad.yaml"
    bad_script.write_text("steps:\n  - shell: []\n", "utf-8")
    cases.append((["--model", f"script:{bad_script}"], 1, "bad.yaml"))
    for args, code, text in cases:
        result = invoke(env, "run", *args, "--transcript", str(tmp_path / "t.jsonl"), "task")
        assert result.exit_code == code, (args, result.output)
        assert text in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.output
        if code == 1:
            assert result.stderr.count("\n") == 1, result.stderr  # one line


@pytest.mark.requires_docker
def test_a_tampered_skill_fails_the_run_in_one_line_and_leaves_nothing(env, tmp_path, agent_image, docker_client):
    from skillctl.registry.local import LocalRegistry

    reg_path = tmp_path / "reg"
    assert invoke(env, "publish", str(REPO / "skills" / "tally"), "--registry", str(reg_path)).exit_code == 0
    with LocalRegistry(reg_path) as reg:
        blob = reg.blob_path(reg.resolve("tally").digest)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    before = owned_containers(docker_client, os.getpid())
    result = invoke(env, "run", "--registry", str(reg_path), "--skill", "tally", "--model",
                    script(tmp_path, [{"answer": "x"}]), "--transcript", str(tmp_path / "t.jsonl"), "task")
    assert result.exit_code == 1
    error = result.stderr.splitlines()[-1]
    assert error.startswith("Error: blob sha256:") and "is corrupt" in error and "skillctl registry verify" in error
    assert "Traceback" not in result.stderr
    assert owned_containers(docker_client, os.getpid()) <= before


@pytest.mark.requires_docker
def test_run_from_a_lock_enforces_its_digests(env, tmp_path, agent_image):
    (tmp_path / "skills.yaml").write_text("skills:\n  tally: ^1.0\n", "utf-8")
    lock = tmp_path / "skills.lock"
    made = invoke(env, "lock", "--requirements", str(tmp_path / "skills.yaml"), "--lock", str(lock))
    assert made.exit_code == 0, made.output
    steps = [{"shell": ["ls /skills"]}, {"answer": "ok"}]
    ok = invoke(env, "run", "--lock", str(lock), "--model", script(tmp_path, steps), "--format", "json",
                "--transcript", str(tmp_path / "t.jsonl"), "task")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["outcome"] == "answered"
    data = json.loads(lock.read_text())
    data["skills"]["tally"]["digest"] = "sha256:" + "1" * 64
    lock.write_text(json.dumps(data), "utf-8")
    refused = invoke(env, "run", "--lock", str(lock), "--model", script(tmp_path, steps),
                     "--transcript", str(tmp_path / "t.jsonl"), "task")
    assert refused.exit_code == 1 and "skills.lock pins" in refused.stderr, refused.output


# --------------------------------------------------------------------------- catalog / export


def test_catalog_prints_the_block(env):
    result = invoke(env, "catalog", "tally", "csv-sql")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("<available_skills>\n<skill>\n<name>csv-sql</name>")
    assert out.index("<name>csv-sql</name>") < out.index("<name>tally</name>")
    assert "<location>/skills/tally/SKILL.md</location>" in out and "`cat`" in out
    assert invoke(env, "catalog", "csv-sql", "tally").stdout == out  # order of refs does not matter
    js = json.loads(invoke(env, "catalog", "tally", "--format", "json").stdout)
    assert js["catalog"] == invoke(env, "catalog", "tally").stdout and js["skills"][0]["name"] == "tally"


def test_catalog_over_budget_warns_on_stderr(env):
    result = invoke(env, "catalog", "tally", "csv-sql", "json-shape", "find-excerpts", "--budget", "700")
    assert result.exit_code == 0, result.output
    assert len(result.stdout) <= 700
    assert result.stderr.startswith("warning: skills catalog over budget")


def test_catalog_of_an_unknown_skill_is_one_line(env):
    result = invoke(env, "catalog", "missing-skill")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "missing-skill" in result.stderr


def test_export_writes_verified_unpacked_skills(env, tmp_path):
    dest = tmp_path / ".agents" / "skills"
    result = invoke(env, "export", "tally", "json-shape", "-o", str(dest))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in dest.iterdir()) == ["json-shape", "tally"]
    for name in ("tally", "json-shape"):
        src = REPO / "skills" / name
        for f in src.rglob("*"):
            if f.is_file():
                out = dest / name / f.relative_to(src)
                assert out.read_bytes() == f.read_bytes()
                assert bool(out.stat().st_mode & 0o100) == bool(f.stat().st_mode & 0o100)
    assert f"tally@1.0.0 -> {dest / 'tally'}" in result.stdout
    again = invoke(env, "export", "tally", "--output", str(dest))  # the same content: nothing to do
    assert again.exit_code == 0, again.output
    (dest / "tally" / "stale.txt").write_text("old", "utf-8")
    refused = invoke(env, "export", "tally", "--output", str(dest))
    assert refused.exit_code == 1 and refused.stderr.count("\n") == 1, refused.output
    assert "already exists with other content" in refused.stderr
    forced = invoke(env, "export", "tally", "--output", str(dest), "--force", "--format", "json")
    assert forced.exit_code == 0, forced.output
    assert not (dest / "tally" / "stale.txt").exists()
    assert json.loads(forced.stdout)[0]["name"] == "tally"


# --------------------------------------------------------------------------- real processes, signals


def start_run(env, tmp_path, steps) -> subprocess.Popen:
    full_env = {**os.environ, **env}
    # A terminal's Ctrl-C: SIGINT at its default disposition (a background job may inherit it ignored).
    return subprocess.Popen(
        [sys.executable, "-c", "from skillctl.cli import main; main()", "run", "--model", script(tmp_path, steps),
         "--transcript", str(tmp_path / "t.jsonl"), "Wait."],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for(proc: subprocess.Popen, text: str) -> str:
    seen = ""
    while text not in seen:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"process ended before printing {text!r}: {seen}")
        seen += line
    return seen


@pytest.mark.requires_docker
def test_ctrl_c_during_a_command_stops_at_once_and_removes_the_container(env, tmp_path, agent_image, docker_client):
    proc = start_run(env, tmp_path, [{"shell": ["sleep 300"]}, {"answer": "never"}])
    try:
        wait_for(proc, "step 1: shell")
        time.sleep(0.5)  # the command is running in the container now
        assert len(owned_containers(docker_client, proc.pid)) == 1
        pid = proc.pid
        proc.send_signal(signal.SIGINT)
        # Not after the command's 300 s or its 60 s timeout: the loop is interrupted right away.
        out, err = proc.communicate(timeout=45)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "outcome: interrupted" in err and out == ""
    assert owned_containers(docker_client, pid) == set()


@pytest.mark.requires_docker
def test_after_sigkill_the_next_run_reaps_the_orphan(env, tmp_path, agent_image, docker_client):
    proc = start_run(env, tmp_path, [{"shell": ["sleep 300"]}, {"answer": "never"}])
    try:
        wait_for(proc, "step 1: shell")
        [orphan] = owned_containers(docker_client, proc.pid)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert docker_client.api.containers(all=True, filters={"id": orphan})  # SIGKILL cannot clean up
    nxt = invoke(env, "run", "--model", script(tmp_path, [{"answer": "ok"}], "next.yaml"),
                 "--transcript", str(tmp_path / "t2.jsonl"), "Again.")
    assert nxt.exit_code == 0, nxt.output
    assert not docker_client.api.containers(all=True, filters={"id": orphan})
