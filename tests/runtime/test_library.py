"""Runs as a library: ``run(RunSpec(...)) -> RunResult`` with the real registry, real sandboxes
and the script model — the documented snippet (docs/library.md) as written, runs without skills, several runs at once
on worker threads, cancellation, checks in the same container, and the Runner's seams."""

from __future__ import annotations

import contextlib
import io
import json
import re
import threading
from pathlib import Path

import pytest
import yaml

from skillctl.errors import ConfigError, RegistryError, SandboxError
from skillctl.models.script import ScriptModel
from skillctl.protocols import ModelReply
from skillctl.runtime import RunResult, Runner, RunSpec, run
from skillctl.runtime.stops import OUTCOME_EXIT_CODES

from sandbox_fixtures import containers_of_this_process

from .helpers import write_script

REPO = Path(__file__).resolve().parents[2]
DEMO_SCRIPT = REPO / "examples" / "demo" / "demo.script.yaml"
DEMO_ANSWER = yaml.safe_load(DEMO_SCRIPT.read_text("utf-8"))["steps"][-1]["answer"]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch) -> None:
    """Default transcripts and registries land in this test's folders, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("SKILLCTL_REGISTRY", raising=False)


def documented_snippet(heading: str = "# Library API") -> str:
    text = (REPO / "docs" / "library.md").read_text("utf-8")
    section = text[text.index(heading):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def local_spec(tmp_path: Path, steps: list, **kw) -> RunSpec:
    """A run in the (unisolated, fast) local sandbox; the same Runner code as a container run."""
    return RunSpec(task="Do the task.", model=f"script:{write_script(tmp_path, steps)}", sandbox="local",
                   allow_unsafe_local=True, transcript=tmp_path / "t.jsonl", **kw)


# ------------------------------------------------------------------------------ in a container


@pytest.mark.requires_docker
def test_the_documented_snippet_runs_as_written(example_registry_path, monkeypatch, agent_image, docker_client):
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(example_registry_path))
    monkeypatch.chdir(REPO)
    before = containers_of_this_process(docker_client)
    out = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(documented_snippet(), "docs/library.md", "exec"), scope)  # noqa: S102 - the documented snippet itself
    result: RunResult = scope["result"]
    assert (result.outcome, result.answer, result.steps, result.exit_code) == ("answered", DEMO_ANSWER, 5, 0)
    assert out.getvalue() == f"answered {DEMO_ANSWER} 5 {result.tokens_used}\n"
    assert result.skills == [{"name": "tally", "version": "1.0.0", "digest": result.skills[0]["digest"]}]
    assert result.duration_s > 0 and Path(result.transcript).is_file()
    assert json.loads(json.dumps(result.to_dict()))["answer"] == DEMO_ANSWER
    assert containers_of_this_process(docker_client) <= before


class RendezvousModel:
    """The script model, but its first reply waits until every run in the group got there: both
    runs pass only if they really run at the same time (a rendezvous, not a stopwatch)."""

    def __init__(self, path: Path, barrier: threading.Barrier) -> None:
        self.inner = ScriptModel(path)
        self.name = self.inner.name
        self.barrier = barrier
        self.calls = 0

    def complete(self, messages, tools) -> ModelReply:
        self.calls += 1
        if self.calls == 1:
            self.barrier.wait(timeout=180)
        return self.inner.complete(messages, tools)


@pytest.mark.requires_docker
def test_runs_on_worker_threads_run_at_once_and_clean_up(tmp_path, example_registry_path, agent_image, docker_client):
    before = containers_of_this_process(docker_client)
    barrier = threading.Barrier(2)
    results: dict[str, RunResult] = {}
    errors: list[BaseException] = []

    def one(name: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        steps = [{"shell": [f"echo {name} > mine.txt && cat mine.txt"]}, {"answer": f"answer of {name}"}]
        spec = RunSpec(task=f"task {name}", model=RendezvousModel(write_script(folder, steps), barrier),
                       skills=["tally"], registry=str(example_registry_path), image=agent_image, checks=["cat mine.txt"])
        try:
            results[name] = run(spec)
        except BaseException as exc:  # surfaced below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and not any(t.is_alive() for t in threads), errors
    for name in ("a", "b"):
        res = results[name]
        assert (res.outcome, res.answer) == ("answered", f"answer of {name}")
        assert res.checks[0].result.stdout == f"{name}\n"  # each run had its own container
    # Default transcripts: one file each, even when both started in the same second.
    assert results["a"].transcript != results["b"].transcript
    assert all(Path(r.transcript).is_file() for r in results.values())
    assert containers_of_this_process(docker_client) <= before


@pytest.mark.requires_docker
def test_cancel_stops_a_running_command_and_removes_the_container(tmp_path, agent_image, docker_client):
    before = containers_of_this_process(docker_client)
    cancel = threading.Event()

    def progress(line: str) -> None:
        if line.startswith("step 1: shell"):
            cancel.set()  # from the run's own thread, just before the command starts: it must not run to its end

    steps = [{"shell": ["sleep 300"]}, {"answer": "never"}]
    spec = RunSpec(task="Wait.", model=f"script:{write_script(tmp_path, steps)}", image=agent_image, progress=progress,
                   cancel=cancel, transcript=tmp_path / "t.jsonl", checks=["true"], output_dir=tmp_path / "out")
    box: dict[str, RunResult] = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", run(spec)))
    worker.start()
    worker.join(timeout=120)  # a guard far below the command's 300 s, not a measurement
    assert not worker.is_alive()
    result = box["r"]
    assert (result.outcome, result.exit_code, result.steps, result.answer) == ("cancelled", 130, 1, None)
    assert result.checks == [] and not (tmp_path / "out").exists()  # a cancelled run is not graded or copied
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "run_end" and events[-1]["outcome"] == "cancelled"
    assert containers_of_this_process(docker_client) <= before


@pytest.mark.requires_docker
def test_checks_and_after_run_see_the_container_the_agent_left(tmp_path, agent_image):
    seen: list[str] = []

    def after_run(sandbox, result) -> None:
        seen.append(sandbox.exec("cat result.txt").stdout)
        seen.append(result.outcome)

    steps = [{"shell": ["echo 42 > result.txt"]}, {"answer": "wrote it"}]
    result = run(RunSpec(task="Write 42.", model=f"script:{write_script(tmp_path, steps)}", image=agent_image,
                         checks=["test -f /workspace/result.txt", "cat result.txt", "exit 3"], after_run=after_run))
    assert [(c.command, c.result.exit_code, c.result.stdout) for c in result.checks] == [
        ("test -f /workspace/result.txt", 0, ""), ("cat result.txt", 0, "42\n"), ("exit 3", 3, "")]
    assert [c.ok for c in result.checks] == [True, True, False]
    assert seen == ["42\n", "answered"]
    report = json.loads(json.dumps(result.to_dict()))
    assert report["checks"][1] == {"command": "cat result.txt", "stdout": "42\n", "stderr": "",
                                   "outcome": {"type": "exit", "exit_code": 0}, "duration_s": report["checks"][1]["duration_s"]}


@pytest.mark.requires_docker
def test_the_image_is_what_select_image_says(tmp_path, agent_image, docker_client):
    class OtherImage(Runner):
        def select_image(self, skills, registry):
            return "skillctl-agent:no-such-image"

    before = containers_of_this_process(docker_client)
    spec = RunSpec(task="t", model=f"script:{write_script(tmp_path, [{'answer': 'x'}])}", image=agent_image)
    with pytest.raises(SandboxError, match="image skillctl-agent:no-such-image is not built"):
        OtherImage(spec).run()
    assert containers_of_this_process(docker_client) <= before


# ------------------------------------------------------------------------------ local sandbox


def test_a_run_without_skills_never_opens_a_registry(tmp_path, monkeypatch):
    # A registry URL that cannot be opened: a run without skills must not touch it.
    monkeypatch.setenv("SKILLCTL_REGISTRY", "ftp://nowhere/at-all")
    result = run(local_spec(tmp_path, [{"shell": ["ls"]}, {"answer": "baseline"}]))
    assert (result.outcome, result.answer, result.skills) == ("answered", "baseline", [])
    with pytest.raises(RegistryError, match="unknown registry scheme 'ftp://'"):
        run(local_spec(tmp_path, [{"answer": "x"}], skills=["tally"]))


def test_local_run_stages_inputs_copies_outputs_and_reports_json(tmp_path, example_registry_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("one two three\n", "utf-8")
    steps = [{"shell": ["wc -w < notes.txt > count.txt", 'python3 "$SKILLS_DIR"/tally/scripts/tally.py --json notes.txt']},
             {"answer": "3 words"}]
    lines: list[str] = []
    result = run(local_spec(tmp_path, steps, skills=["tally"], registry=str(example_registry_path), inputs=[notes],
                            output_dir=tmp_path / "out", progress=lines.append, checks=["cat count.txt"]))
    assert (result.outcome, result.answer, result.exit_code) == ("answered", "3 words", 0)
    assert (tmp_path / "out" / "count.txt").read_text() == "3\n" and sorted(result.outputs) == ["count.txt", "notes.txt"]
    assert result.checks[0].result.stdout == "3\n"
    assert "sandbox started (local)" in lines and any(line.startswith("loaded tally@1.0.0 -> ") for line in lines)
    report = result.to_dict()
    assert {"outcome", "exit_code", "answer", "steps", "Z", "final_context", "prefix_reuse", "duration_s", "transcript",
            "checks", "skills", "outputs", "warnings"} <= set(report)
    assert report["exit_code"] == OUTCOME_EXIT_CODES["answered"] and report["steps"] == 2
    json.dumps(report)


def test_the_transcripts_run_end_is_the_whole_result_with_what_was_loaded(tmp_path, example_registry_path):
    steps = [{"shell": ["echo seen > /memory/MEMORY.md", "echo out > f"]}, {"answer": "done"}]
    result = run(local_spec(tmp_path, steps, skills=["tally"], registry=str(example_registry_path), memory="proj",
                            output_dir=tmp_path / "out", checks=["cat f"]))
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text("utf-8").splitlines()]
    end = events[-1]
    assert end["type"] == "run_end" and [e["type"] for e in events].count("run_end") == 1
    # written after the loop: what the runner loaded and did around it is there, as in the result
    assert end["skills"] == result.to_dict()["skills"] and end["skills"][0]["name"] == "tally"
    assert end["memory"] == result.memory and Path(end["memory"]).name == "proj"
    assert end["checks"][0]["stdout"] == "out\n" and "f" in end["outputs"]
    assert end["duration_s"] == round(result.duration_s, 3)


def test_run_end_is_written_when_the_run_fails_after_the_loop(tmp_path, example_registry_path):
    class Broken(Runner):
        def finish(self, sandbox, result):
            raise RuntimeError("a bug after the loop")

    with pytest.raises(RuntimeError, match="a bug after the loop"):
        Broken(local_spec(tmp_path, [{"answer": "done"}], skills=["tally"], registry=str(example_registry_path))).run()
    end = json.loads((tmp_path / "t.jsonl").read_text("utf-8").splitlines()[-1])
    assert (end["type"], end["outcome"], end["skills"][0]["name"]) == ("run_end", "answered", "tally")


def test_set_up_and_tear_down_wrap_the_sandbox(tmp_path):
    events: list[str] = []

    class Wrapped(Runner):
        def sandbox_options(self, image):
            return {**super().sandbox_options(image), "env": {"POLICY": "on"}}

        @contextlib.contextmanager
        def sandbox_session(self, image):
            events.append("set up")
            with super().sandbox_session(image) as sandbox:
                events.append(f"sandbox {Path(sandbox.workspace).parent.exists()}")
                self.folder = Path(sandbox.workspace).parent
                yield sandbox
            events.append(f"torn down, folder gone: {not self.folder.exists()}")

    result = Wrapped(local_spec(tmp_path, [{"shell": ['echo "$POLICY"']}, {"answer": "ok"}])).run()
    assert result.outcome == "answered"
    assert events == ["set up", "sandbox True", "torn down, folder gone: True"]
    tool = [m for m in result.history if m.role == "tool"][0].content
    assert "stdout:\non\n" in tool  # the option reached the sandbox


def test_an_output_copy_that_fails_keeps_the_answer_and_exits_10(tmp_path):
    (tmp_path / "out").write_text("a file where the folder should go", "utf-8")
    result = run(local_spec(tmp_path, [{"shell": ["echo x > f"]}, {"answer": "done"}], output_dir=tmp_path / "out"))
    assert (result.outcome, result.answer, result.exit_code) == ("answered", "done", 10)
    assert result.output_error and "the workspace was not copied to" in result.output_error
    assert result.to_dict()["output_error"] == result.output_error and result.warnings == []
    assert (tmp_path / "out").read_text("utf-8") == "a file where the folder should go"


def test_a_sandbox_that_cannot_be_removed_does_not_lose_the_answer(tmp_path):
    class Stuck(Runner):
        @contextlib.contextmanager
        def sandbox_session(self, image):
            with super().sandbox_session(image) as sandbox:
                yield sandbox
            raise SandboxError("removing sandbox container x failed: the daemon did not answer")

    result = Stuck(local_spec(tmp_path, [{"answer": "done"}])).run()
    assert (result.outcome, result.answer, result.exit_code) == ("answered", "done", 0)
    assert result.warnings == ["the sandbox was not removed: removing sandbox container x failed: the daemon did not answer"]


@pytest.mark.parametrize("changes, message", [
    ({"task": "  "}, "task must be a non-empty text"),
    ({"model": ""}, "model is missing"),
    ({"skills": "tally"}, "skills must be a list of references"),
    ({"max_steps": 0}, "max_steps must be at least 1"),
    ({"context_budget": 10}, "context_budget must be at least 1000 tokens"),
    ({"timeout_ms": 5}, "timeout_ms must be at least 100"),
    ({"approve": "maybe"}, "approve must be one of policy, never, all"),
    ({"checks": ["ok", ""]}, "checks must be a list of non-empty commands"),
    ({"max_seconds": 0}, "max_seconds must be positive"),
])
def test_an_invalid_spec_is_one_line_naming_the_field(changes, message):
    spec = {"task": "t", "model": "script:x.yaml", **changes}
    with pytest.raises(ConfigError, match=f"invalid run: .*{message}") as exc:
        RunSpec(**spec)
    assert "\n" not in str(exc.value)
