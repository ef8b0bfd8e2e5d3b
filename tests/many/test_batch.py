"""``skillctl batch``: every bad line reported with its number before anything runs; one
result line appended per finished run; a re-run skips ids already done; Ctrl-C (a real SIGINT
to a real process) removes every container and records nothing half-done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.errors import ConfigError
from skillctl.many.batch import ResultsFile, default_results_path, read_tasks, run_batch
from skillctl.many.job import RunSettings
from skillctl.many.engines import LABEL_BATCH, default_jobs, open_engine, usable_cpus
from skillctl.many.job import line_id
from skillctl.registry import open_registry
from skillctl.sandbox.settings import LABEL_MANAGED, LABEL_OWNER

from .conftest import REPO, write_yaml


def tasks_file(folder: Path, lines: list) -> Path:
    path = folder / "tasks.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), "utf-8")
    return path


# ------------------------------------------------------------------------------ the tasks file


def test_lines_are_read_with_ids_files_and_models(tmp_path):
    (tmp_path / "in.txt").write_text("x")
    write_yaml(tmp_path / "own.yaml", [{"answer": "x"}])
    path = tasks_file(tmp_path, [{"id": "a", "task": "t1", "skills": ["tally@^1"], "files": ["in.txt"]}, "",
                                 {"task": "t2", "model": "script:own.yaml"}, {"id": 7, "task": "t3"}])
    a, b, c = read_tasks(path, default_model="script:default.yaml")
    assert (a.id, a.line, a.skills, a.files, a.model) == ("a", 1, ("tally@^1",), (tmp_path / "in.txt",), "script:default.yaml")
    assert b.line == 3 and b.model == f"script:{tmp_path / 'own.yaml'}"  # relative to the tasks file
    assert b.id == line_id({"task": "t2", "model": "script:own.yaml"}) and b.id.startswith("h")
    assert c.id == "7"
    # The same content has the same id whatever the key order: a re-run finds it.
    assert line_id({"model": "script:own.yaml", "task": "t2"}) == b.id


def test_every_bad_line_is_reported_with_its_number_and_nothing_runs(tmp_path):
    path = tasks_file(tmp_path, [
        {"task": "fine"},
        "{not json",
        {"prompt": "x"},
        {"task": "t", "files": ["nope.txt"]},
        {"id": "a b", "task": "t"},
        {"task": "t", "skills": "tally"},
        {"task": "fine"},
        {"id": "dup", "task": "t"},
        {"id": "dup", "task": "u"},
    ])
    with pytest.raises(ConfigError) as exc:
        read_tasks(path, default_model="script:m.yaml")
    text = str(exc.value)
    assert "\n" not in text and text.startswith(f"{path}: 7 bad line(s): ")
    for part in ("line 2: not JSON (Expecting property name enclosed in double quotes at column 2)",
                 "line 3: top level: missing 'task'; top level: unknown key 'prompt' (allowed: files, id, model, skills, task)",
                 "line 4: files[0]: nope.txt does not exist (paths are relative to the tasks file)",
                 "line 5: id: an id is letters, digits",
                 "line 6: top level: 'skills' must be a list",
                 "line 7: id 'h", "is already used by line 1",
                 "line 9: id 'dup' is already used by line 8"):
        assert part in text, part


SECRET = "the-secret-outside-the-tasks-folder"


def _escaping_tasks(tmp_path: Path) -> tuple[Path, Path]:
    """A tasks folder whose lines name a file outside it in every spelling; (tasks file, outside file)."""
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET + "\n")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "key").write_text(SECRET)
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "in.txt").write_text("fine\n")
    (folder / "link.txt").symlink_to(outside)
    (folder / "linked-folder").symlink_to(tmp_path / "private")
    (folder / "sub").mkdir()
    (folder / "sub" / "up").symlink_to("..")
    path = tasks_file(folder, [{"task": "fine", "files": ["in.txt"]},
                               {"task": "t", "files": ["../outside.txt"]},
                               {"task": "t", "files": [str(outside)]},
                               {"task": "t", "files": ["in.txt", "link.txt"]},
                               {"task": "t", "files": ["linked-folder"]},
                               {"task": "t", "files": ["sub/up/../outside.txt"]},
                               {"task": "t", "files": ["."]}])
    return path, outside


def test_a_file_outside_the_tasks_folder_is_refused_naming_the_line_and_the_path(tmp_path):
    path, outside = _escaping_tasks(tmp_path)
    with pytest.raises(ConfigError) as exc:
        read_tasks(path, default_model="script:m.yaml")
    text = str(exc.value)
    assert "\n" not in text and text.startswith(f"{path}: 6 bad line(s): ")
    for line, where, name in ((2, 0, "../outside.txt"), (3, 0, str(outside)), (4, 1, "link.txt"), (5, 0, "linked-folder"),
                              (6, 0, "sub/up/../outside.txt"), (7, 0, ".")):
        assert f"line {line}: files[{where}]: {name} is outside the tasks file's folder {path.parent} " in text, line
    assert "pass --allow-outside-files" in text
    # asked for explicitly, they are read as before
    tasks = read_tasks(path, default_model="script:m.yaml", allow_outside_files=True)
    assert [t.files for t in tasks[1:3]] == [(path.parent / "../outside.txt",), (outside,)]


def test_the_batch_command_stages_nothing_from_outside_unless_asked(tmp_path):
    path, _ = _escaping_tasks(tmp_path)
    path.write_text(json.dumps({"id": "leak", "task": "show it", "files": ["../outside.txt"]}) + "\n")
    model = write_yaml(tmp_path / "m.yaml", [{"shell": ["cat outside.txt"]}, {"answer": "shown"}])
    args = ["batch", str(path), "--model", f"script:{model}", *LOCAL_ARGS, "--registry", str(tmp_path / "reg")]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 1 and "Traceback" not in refused.output, refused.output
    [line] = [l for l in refused.stderr.splitlines() if l.strip()]
    assert "line 1: files[0]: ../outside.txt is outside the tasks file's folder" in line
    results = default_results_path(path)
    assert not results.exists() and not results.with_name("tasks.results.transcripts").exists()
    allowed = CliRunner().invoke(cli, [*args, "--allow-outside-files"])
    assert allowed.exit_code == 0, allowed.output
    [record] = map(json.loads, results.read_text().splitlines())
    assert SECRET in Path(record["transcript"]).read_text()  # what the flag is for: staging it anyway


def test_a_line_without_a_model_and_no_default_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"line 1: no model: add \"model\" to the line or pass --model"):
        read_tasks(tasks_file(tmp_path, [{"task": "t"}]))
    with pytest.raises(ConfigError, match="holds no tasks"):
        read_tasks(tasks_file(tmp_path, ["", "  "]), default_model="script:x")
    with pytest.raises(ConfigError, match="does not exist"):
        read_tasks(tmp_path / "missing.jsonl")


def test_results_default_beside_the_tasks_and_a_torn_last_line_is_dropped(tmp_path):
    assert default_results_path(tmp_path / "jobs.jsonl") == tmp_path / "jobs.results.jsonl"
    results = ResultsFile(tmp_path / "r.jsonl")
    assert results.transcripts == tmp_path / "r.transcripts"
    results.path.write_text('{"id": "a"}\n{"id": "b", "outc')
    warnings: list[str] = []
    assert results.done_ids(warnings.append) == {"a"}
    assert results.path.read_text() == '{"id": "a"}\n' and "cut short" in warnings[0]
    results.path.write_text('{"id": "a"}\ngarbage\n{"id": "c"}\n')
    with pytest.raises(ConfigError, match=r"r.jsonl:2 is not a result line; fix it or move the file away"):
        results.done_ids(warnings.append)


def test_default_jobs_follow_cpus_and_memory():
    assert default_jobs(run_memory=1) == usable_cpus()  # memory is no limit: one run per CPU
    assert default_jobs(run_memory=1 << 60) == 1  # a run that needs more than there is: still one
    assert default_jobs(run_memory=1, run_cpus=usable_cpus() * 2) == 1


# ------------------------------------------------------------------------------ running (local sandbox: fast)


def test_a_batch_appends_results_and_a_rerun_skips_what_is_done(tmp_path):
    (tmp_path / "notes.txt").write_text("one two three\n")
    model = write_yaml(tmp_path / "m.yaml", [{"shell": ["wc -w < notes.txt"]}, {"answer": "three"}])
    path = tasks_file(tmp_path, [{"id": "a", "task": "count", "files": ["notes.txt"]},
                                 {"task": "count too", "files": ["notes.txt"]},
                                 {"id": "bad", "task": "uses a skill nobody published", "skills": ["no-such-skill"]}])
    lines: list[str] = []
    engine = open_engine("local", jobs=2)
    open_registry(str(tmp_path / "empty-registry"), create=True).close()  # a registry without the skill
    defaults = RunSettings(sandbox="local", allow_unsafe_local=True, registry=str(tmp_path / "empty-registry"))
    summary = run_batch(path, engine, model=f"script:{model}", settings=defaults, progress=lines.append)
    assert (summary.total, summary.skipped, dict(summary.outcomes), summary.exit_code) == (3, 0, {"answered": 2, "failed": 1}, 1)
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "tasks.results.jsonl").read_text().splitlines())}
    assert set(records) == {"a", read_tasks(path, default_model="x")[1].id, "bad"}
    a = records["a"]
    assert (a["outcome"], a["answer"], a["steps"], a["line"], a["attempts"]) == ("answered", "three", 2, 1, 1)
    assert a["Z"] > 0 and a["duration_s"] > 0
    transcript = [json.loads(x) for x in Path(a["transcript"]).read_text().splitlines()]
    assert transcript[-1]["type"] == "run_end" and Path(a["transcript"]).parent == tmp_path / "tasks.results.transcripts"
    assert Path(a["transcript"]).stat().st_mode & 0o777 == 0o600  # as private as the run's own
    tool = [e for e in transcript if e["type"] == "message" and e["message"]["role"] == "tool"][0]
    assert "3" in tool["message"]["content"]  # the staged file was there
    bad = records["bad"]
    assert (bad["outcome"], bad["exit_code"], bad["transcript"]) == ("failed", 1, None) and "no-such-skill" in bad["message"]
    assert any("bad: failed: " in line for line in lines) and any(line.startswith("[####################] 3/3") for line in lines)
    again = run_batch(path, engine, model=f"script:{model}", settings=defaults, progress=lines.append)
    assert (again.skipped, sum(again.outcomes.values())) == (3, 0)
    assert len((tmp_path / "tasks.results.jsonl").read_text().splitlines()) == 3


def test_retry_failed_reruns_only_the_lines_that_did_not_run(tmp_path):
    model = write_yaml(tmp_path / "m.yaml", [{"shell": ["ls $SKILLS_DIR"]}, {"answer": "ran"}])
    path = tasks_file(tmp_path, [{"id": "plain", "task": "t"}, {"id": "skilled", "task": "t", "skills": ["tally"]}])
    reg = tmp_path / "reg"
    open_registry(str(reg), create=True).close()  # tally is not published yet: that line cannot start
    args = ["batch", str(path), "--model", f"script:{model}", *LOCAL_ARGS, "--registry", str(reg), "--format", "json"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 1 and json.loads(first.stdout)["outcomes"] == {"answered": 1, "failed": 1}, first.output
    published = CliRunner().invoke(cli, ["publish", str(REPO / "skills" / "tally"), "--registry", str(reg)])
    assert published.exit_code == 0, published.output
    plain = CliRunner().invoke(cli, args)  # without the flag a failed line counts as done
    assert plain.exit_code == 0 and (json.loads(plain.stdout)["skipped"], json.loads(plain.stdout)["ran"]) == (2, 0)
    retry = CliRunner().invoke(cli, [*args, "--retry-failed"])
    assert retry.exit_code == 0, retry.output
    summary = json.loads(retry.stdout)
    assert (summary["skipped"], summary["retried"], summary["outcomes"]) == (1, 1, {"answered": 1})
    assert "1 run(s) to do (1 that did not run before), 1 already done" in retry.stderr
    records = [json.loads(x) for x in default_results_path(path).read_text().splitlines()]
    pairs = [(r["id"], r["outcome"]) for r in records]  # the first batch's in the order its runs ended
    assert sorted(pairs[:2]) == [("plain", "answered"), ("skilled", "failed")] and pairs[2] == ("skilled", "answered")
    assert records[-1]["skills"][0]["name"] == "tally"
    done = CliRunner().invoke(cli, [*args, "--retry-failed"])  # the last result of an id counts: nothing left
    assert done.exit_code == 0 and (json.loads(done.stdout)["skipped"], json.loads(done.stdout)["ran"]) == (2, 0)


# ------------------------------------------------------------------------------ the command, in containers


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("batch-reg") / "reg"
    result = CliRunner().invoke(cli, ["publish", str(REPO / "skills" / "tally"), "--registry", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.requires_docker
def test_batch_command_runs_in_containers_with_skills_and_reports_json(tmp_path, registry, agent_image, docker_client):
    (tmp_path / "notes.txt").write_text("a b c d e\n")
    model = write_yaml(tmp_path / "m.yaml", [{"shell": ["python3 /skills/tally/scripts/tally.py notes.txt"]},
                                             {"answer": "counted"}])
    path = tasks_file(tmp_path, [{"id": f"t{i}", "task": "Count the words.", "skills": ["tally"], "files": ["notes.txt"]}
                                 for i in range(3)])
    out = tmp_path / "out" / "results.jsonl"
    args = ["batch", str(path), "-o", str(out), "--model", f"script:{model}", "-j", "2", "--registry", str(registry),
            "--format", "json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["tasks"], summary["ran"], summary["outcomes"]) == (3, 3, {"answered": 3})
    assert "up to 2 at once" in result.stderr
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["id"] for r in records) == ["t0", "t1", "t2"]
    for r in records:
        assert r["skills"][0]["name"] == "tally"
        outputs = [json.loads(x) for x in Path(r["transcript"]).read_text().splitlines() if '"tool"' in x]
        assert any("5 words" in json.dumps(e) for e in outputs)
    assert not docker_client.api.containers(all=True, filters={"label": [f"{LABEL_BATCH}={summary['batch']}"]})
    rerun = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert rerun.exit_code == 0 and json.loads(rerun.stdout)["skipped"] == 3


def containers_of(docker_client, pid: int) -> list[dict]:
    found = []
    for c in docker_client.api.containers(all=True, filters={"label": [f"{LABEL_MANAGED}=1", LABEL_BATCH]}):
        owner = (c.get("Labels") or {}).get(LABEL_OWNER, "")
        if owner.split("/")[2:3] == [str(pid)]:
            found.append(c)
    return found


def started(docker_client, container_id: str) -> bool:
    """Whether the run's first command has begun (it touches a marker before sleeping)."""
    try:
        exec_id = docker_client.api.exec_create(container_id, "test -f /workspace/started")
        docker_client.api.exec_start(exec_id)
        return docker_client.api.exec_inspect(exec_id)["ExitCode"] == 0
    except Exception:  # the container is still starting or already going
        return False


@pytest.mark.requires_docker
def test_ctrl_c_stops_every_run_removes_every_container_and_records_nothing(tmp_path, agent_image, docker_client):
    model = write_yaml(tmp_path / "m.yaml", [{"shell": ["touch /workspace/started && sleep 300"], "timeout_ms": 400000},
                                             {"answer": "never"}])
    path = tasks_file(tmp_path, [{"id": f"t{i}", "task": "Wait."} for i in range(4)])
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "SKILLCTL_MODEL": ""}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from skillctl.cli import main; main()", "batch", str(path), "-j", "2",
         "--model", f"script:{model}", "--timeout-ms", "400000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # rendezvous: both runs are inside their command
            running = containers_of(docker_client, proc.pid)
            if len(running) == 2 and all(started(docker_client, c["Id"]) for c in running):
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        else:
            raise AssertionError("the two runs never started their command")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # far below the commands' 300 s: they were stopped
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted: stopping 2 running run(s)" in err and "run the same command again to resume" in err
    assert containers_of(docker_client, proc.pid) == []
    results = tmp_path / "tasks.results.jsonl"
    assert not results.exists() or results.read_text() == ""  # cancelled runs are not done: they run again


def test_bad_run_options_are_one_line(tmp_path):
    from skillctl.many.job import RunSettings

    with pytest.raises(ConfigError, match="unknown limit\\(s\\) max_stepz; valid: max_steps, max_seconds"):
        RunSettings(limits={"max_stepz": 3})
    path = tasks_file(tmp_path, [{"task": "t"}])
    result = CliRunner().invoke(cli, ["batch", str(path), "--model", "script:x.yaml", "--memory-limit", "lots"])
    assert result.exit_code == 1 and "cannot read the size 'lots'; write e.g. 2g or 512m" in result.stderr
    assert not (tmp_path / "tasks.results.jsonl").exists()
    missing = CliRunner().invoke(cli, ["batch", str(tmp_path / "nope.jsonl"), "--model", "script:x.yaml", *LOCAL_ARGS])
    assert missing.exit_code == 1 and "tasks file" in missing.stderr and "does not exist" in missing.stderr


LOCAL_ARGS = ["--sandbox", "local", "--allow-unsafe-local"]
