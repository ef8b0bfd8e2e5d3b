"""The ``Sandbox`` contract, one suite for every backend: the same assertions against the Docker
sandbox (real engine, real agent image) and the unisolated local backend.

To add a backend: open it in ``sandbox()``/``fresh()`` below and add its name to ``BACKENDS``.
What only one backend promises (hardening, capture caps, process-group details) stays in
``test_sandbox_docker.py`` / ``test_sandbox_local.py``. No stopwatches: concurrency is proven
by rendezvous, and a killed process is polled for with a generous deadline.
"""

from __future__ import annotations

import io
import tarfile
import threading
import time
from typing import Iterator

import pytest
from bundle.archives import files_tar
from sandbox.processes import leftovers, marker

from skillctl.errors import SandboxError
from skillctl.protocols import Sandbox
from skillctl.sandbox import open_sandbox

BACKENDS = [pytest.param("docker", marks=pytest.mark.requires_docker), "local"]
EXTRA = "/memory"


def _open(request: pytest.FixtureRequest, kind: str, **settings) -> Sandbox:
    if kind == "docker":
        return open_sandbox("docker", image=request.getfixturevalue("agent_image"),
                            client=request.getfixturevalue("docker_client"), **settings)
    return open_sandbox("local", allow_unsafe_local=True, warn_stream=io.StringIO(), **settings)


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """One started sandbox per backend, with an extra folder, shared by the module's tests
    (each test writes under its own names)."""
    sb = _open(request, request.param, kill_after_s=1.0, extra_dirs=(EXTRA,))
    with sb:
        yield sb


@pytest.fixture(params=BACKENDS)
def fresh(request: pytest.FixtureRequest) -> Sandbox:
    """An unstarted sandbox of each backend, for lifecycle tests."""
    return _open(request, request.param)


def names(tar: bytes) -> dict[str, bytes | None]:
    with tarfile.open(fileobj=io.BytesIO(tar), mode="r:") as archive:
        return {m.name: archive.extractfile(m).read() if m.isfile() else None for m in archive.getmembers()}


def test_paths_are_as_commands_see_them(sandbox: Sandbox) -> None:
    assert isinstance(sandbox, Sandbox)
    for path in (sandbox.workspace, sandbox.skills_root, sandbox.agent_path(EXTRA)):
        assert path.startswith("/") and sandbox.exec(f"test -d {path}").ok, path
    assert sandbox.agent_path("/workspace") == sandbox.workspace
    assert sandbox.agent_path("/skills/x/SKILL.md") == sandbox.skills_root + "/x/SKILL.md"
    assert sandbox.exec("pwd").stdout == sandbox.workspace + "\n"  # every command starts there
    for bad in ("relative/path", "/workspace/../etc"):
        with pytest.raises(SandboxError, match="absolute without '..'"):
            sandbox.agent_path(bad)


def test_exit_codes_output_env_and_cwd_are_data(sandbox: Sandbox) -> None:
    tmp = sandbox.agent_path("/tmp")
    result = sandbox.exec('echo "$A-$B" >&2; pwd; exit 7', env={"A": "x", "B": "y"}, cwd=tmp)
    assert (result.outcome_type, result.exit_code, result.ok) == ("exit", 7, False)
    assert result.stdout == tmp + "\n" and result.stderr == "x-y\n"
    assert result.to_dict() == {"stdout": tmp + "\n", "stderr": "x-y\n", "outcome": {"type": "exit", "exit_code": 7}}
    assert sandbox.exec("true").ok


def test_exit_124_before_the_deadline_is_not_a_timeout(sandbox: Sandbox) -> None:
    result = sandbox.exec("exit 124", timeout_s=30)
    assert (result.outcome_type, result.exit_code) == ("exit", 124)


def test_a_timeout_is_data_and_kills_the_command_and_its_children(sandbox: Sandbox) -> None:
    result = sandbox.exec("sleep 1231 & echo $! > timeout-child.pid; sleep 1232", timeout_s=1)
    assert (result.outcome_type, result.exit_code) == ("timeout", None)
    assert result.to_dict()["outcome"] == {"type": "timeout"}
    # Polled with a generous deadline (no stopwatch): the child is gone or a zombie awaiting reaping.
    gone = sandbox.exec(
        "pid=$(cat timeout-child.pid); i=0; while [ $i -lt 300 ]; do "
        's=$(ps -o stat= -p "$pid"); case "$s" in ""|Z*) echo gone; exit 0;; esac; i=$((i+1)); sleep 0.1; done; '
        "echo alive; exit 1",
        timeout_s=60,
    )
    assert gone.ok and gone.stdout == "gone\n", gone


def test_commands_given_together_run_concurrently_in_order(sandbox: Sandbox) -> None:
    # A rendezvous instead of a stopwatch: each command waits for the other's file, so both
    # succeed only if they really overlap, however loaded the machine is.
    wait = "touch rv-{me}; i=0; while [ ! -e rv-{other} ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 9; sleep 0.05; done; echo {me}"
    results = sandbox.exec_many([wait.format(me="a", other="b"), "echo second", wait.format(me="b", other="a")], timeout_s=90)
    assert [(r.exit_code, r.stdout) for r in results] == [(0, "a\n"), (0, "second\n"), (0, "b\n")]
    assert sandbox.exec_many([]) == []


# ----------------------------------------------------------- nothing a command starts outlives it
# Checked right after ``exec`` returned, with no wait: the processes are already killed and
# reaped by then, however loaded the machine is.


def test_background_processes_are_gone_when_the_command_exits(sandbox: Sandbox) -> None:
    m = marker()
    result = sandbox.exec(
        f"sleep {m} & nohup sleep {m} >/dev/null 2>&1 & setsid sleep {m} & (sleep {m} &); "
        f"sh -c 'setsid sh -c \"sleep {m}\" & exit 0'; echo started; exit 3"
    )
    assert (result.outcome_type, result.exit_code, result.stdout) == ("exit", 3, "started\n"), result
    assert leftovers(sandbox, m) == []


def test_detached_processes_are_gone_after_a_timeout(sandbox: Sandbox) -> None:
    m = marker()
    result = sandbox.exec(f"setsid sleep {m} & nohup setsid sleep {m} >/dev/null 2>&1 & sleep {m}", timeout_s=1)
    assert result.outcome_type == "timeout", result
    assert leftovers(sandbox, m) == []


def test_a_detached_spawner_is_stopped_while_it_spawns(sandbox: Sandbox) -> None:
    # Still forking when the command ends: the supervisor must go round until nothing is left.
    # Bounded (150 children), because the local backend has no process limit.
    m = marker()
    result = sandbox.exec(
        f"setsid sh -c 'i=0; while [ $i -lt 150 ]; do (sleep {m} &); i=$((i+1)); done; sleep {m}' & "
        f"while [ $(ps -eo args= | grep -c -e '[{m[0]}]{m[1:]}') -lt 5 ]; do :; done; echo spawning"
    )
    assert result.stdout == "spawning\n", result
    assert leftovers(sandbox, m) == []


def test_commands_running_beside_it_are_untouched(sandbox: Sandbox) -> None:
    # A long command with a background child runs while others leave processes behind and end
    # (by exit and by timeout). It must still see its child alive afterwards.
    m, other = marker(), marker()
    tmp = sandbox.agent_path("/tmp")
    go, pidfile = f"{tmp}/go-{m}", f"{tmp}/pid-{m}"
    box: dict = {}

    def long_command() -> None:
        box["result"] = sandbox.exec(
            f"sleep {m} & echo $! > {pidfile}; i=0; while [ ! -e {go} ]; do i=$((i+1)); "
            f"[ $i -gt 3000 ] && exit 9; sleep 0.05; done; kill -0 $(cat {pidfile}) && echo child-alive",
            timeout_s=300,
        )

    worker = threading.Thread(target=long_command)
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while not sandbox.exec(f"test -s {pidfile}").ok:
            assert time.monotonic() < deadline, "the long command never started"
        assert sandbox.exec(f"setsid sleep {other} & sleep {other} & exit 0").ok
        assert sandbox.exec(f"setsid sleep {other} & sleep {other}", timeout_s=0.5).outcome_type == "timeout"
        results = sandbox.exec_many([f"setsid sleep {other} & true", f"nohup sleep {other} >/dev/null 2>&1 &"])
        assert [r.exit_code for r in results] == [0, 0]
        assert leftovers(sandbox, other) == []
        # The long command's own child is still there (its sh, timeout and supervisor too).
        assert [line for line in leftovers(sandbox, m) if line.startswith("sleep")] == [f"sleep {m}"]
    finally:
        sandbox.exec(f"touch {go}")
        worker.join(timeout=300)
    assert box["result"].stdout == "child-alive\n", box["result"]
    assert leftovers(sandbox, m) == []


def test_skills_put_into_skills_root_can_be_run(sandbox: Sandbox) -> None:
    script = b'#!/bin/sh\necho "ran $(basename "$0")"\n'
    sandbox.put_archive(sandbox.skills_root, files_tar({"conf-demo/scripts/run.sh": script}, 0o755))
    result = sandbox.exec(f"{sandbox.skills_root}/conf-demo/scripts/run.sh")
    assert (result.exit_code, result.stdout) == (0, "ran run.sh\n")


def test_files_staged_for_the_agent_user_are_its_own(sandbox: Sandbox) -> None:
    sandbox.put_archive(f"{sandbox.workspace}/staged/deep", files_tar({"data/in.csv": b"a,b\n"}), user=sandbox.agent_user)
    result = sandbox.exec("echo 1,2 >> staged/deep/data/in.csv && touch staged/deep/data/new && cat staged/deep/data/in.csv"
                          " && test $(stat -c %u staged/deep/data/in.csv) = $(id -u)")
    assert (result.exit_code, result.stdout) == (0, "a,b\n1,2\n"), result


def test_get_archive_returns_the_folder_under_its_own_name(sandbox: Sandbox) -> None:
    assert sandbox.exec("mkdir -p out/sub && echo result > out/sub/r.txt").ok
    got = names(sandbox.get_archive(f"{sandbox.workspace}/out"))
    assert got["out/sub/r.txt"] == b"result\n" and "out" in got
    with pytest.raises(SandboxError, match="no such file or folder in the sandbox"):
        sandbox.get_archive(f"{sandbox.workspace}/nope")


def test_open_archive_streams_the_folder_in_chunks(sandbox: Sandbox) -> None:
    assert sandbox.exec("mkdir -p streamed/sub && echo a > streamed/sub/a.txt && head -c 3000000 /dev/zero > streamed/big"
                        " && ln streamed/sub/a.txt streamed/hard").ok
    with sandbox.open_archive(f"{sandbox.workspace}/streamed") as chunks:
        pieces = list(chunks)
    assert len(pieces) > 1 and max(map(len, pieces)) < 3_000_000  # pieces of the archive, never all of it
    with tarfile.open(fileobj=io.BytesIO(b"".join(pieces)), mode="r:") as archive:
        members = {m.name: m for m in archive.getmembers()}
        assert archive.extractfile(members["streamed/sub/a.txt"]).read() == b"a\n"
        assert members["streamed/big"].size == 3_000_000
        # A second name for a file comes as a hard link to the first (lexical order: hard < sub).
        assert {members["streamed/hard"].type, members["streamed/sub/a.txt"].type} == {tarfile.LNKTYPE, tarfile.REGTYPE}
    with pytest.raises(SandboxError, match="no such file or folder in the sandbox"):
        with sandbox.open_archive(f"{sandbox.workspace}/nope"):
            pass
    assert sandbox.exec("rm -r streamed").ok


def test_an_archive_over_its_cap_stops_while_read_and_every_stream_is_closed(sandbox: Sandbox) -> None:
    assert sandbox.exec("head -c 256000000 /dev/zero > capped.bin").ok
    path = f"{sandbox.workspace}/capped.bin"
    with pytest.raises(SandboxError, match="larger than max_archive_bytes"):
        with sandbox.open_archive(path, max_bytes=1_000_000) as chunks:
            for _ in chunks:
                pass
    with sandbox.open_archive(path) as chunks:  # left after one chunk
        next(chunks)
    # The iterator is still referenced here (as a traceback or a caller may keep it): leaving
    # the block must have closed the stream all the same. A stream left open kept the container
    # locked: this command hung for minutes, then failed.
    assert chunks is not None
    assert sandbox.exec("rm capped.bin && echo usable", timeout_s=30).stdout == "usable\n"


def test_an_extra_folder_is_the_agents_and_moves_as_tar(sandbox: Sandbox) -> None:
    extra = sandbox.agent_path(EXTRA)
    sandbox.put_archive(extra, files_tar({"MEMORY.md": b"# Memory\n"}), user=sandbox.agent_user)
    assert sandbox.exec(f"echo fact >> {extra}/MEMORY.md && mkdir -p {extra}/topics && echo t > {extra}/topics/a.md").ok
    got = names(sandbox.get_archive(extra))
    top = extra.rsplit("/", 1)[1]
    assert got[f"{top}/MEMORY.md"] == b"# Memory\nfact\n" and got[f"{top}/topics/a.md"] == b"t\n"


def test_a_timeout_or_sh_first_on_path_is_not_what_runs_the_command(sandbox: Sandbox) -> None:
    """A skill environment puts its dependencies' scripts first on PATH: the harness's own
    programs must not be found there. These stand-ins say so when they run, and the `timeout`
    one drops the deadline, as a package's script could."""
    fakebin = sandbox.agent_path("/tmp") + "/fakebin"
    sandbox.put_archive(fakebin, files_tar({
        "timeout": b'#!/bin/sh\necho "stand-in timeout ran" >&2\nshift 3\nexec "$@"\n',
        "sh": b'#!/bin/sh\necho "stand-in sh ran" >&2\nexec /bin/sh "$@"\n',
    }, 0o755))
    path = f"{fakebin}:/usr/local/bin:/usr/bin:/bin"
    result = sandbox.exec("sleep 8; echo finished", timeout_s=1, env={"PATH": path})
    assert (result.outcome_type, result.stdout) == ("timeout", ""), result
    assert "stand-in" not in result.stderr, result
    ran = sandbox.exec("command -v timeout; echo $0", env={"PATH": path})
    assert ran.stdout == f"{fakebin}/timeout\n/bin/sh\n" and ran.stderr == "", ran  # the command itself sees PATH


def test_invalid_calls_are_sandbox_errors(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxError, match="positive"):
        sandbox.exec("true", timeout_s=0)
    with pytest.raises(SandboxError):
        sandbox.put_archive("relative", files_tar({"x": b""}))


def test_lifecycle_unstarted_started_stopped(fresh: Sandbox) -> None:
    with pytest.raises(SandboxError, match="not started"):
        fresh.exec("true")
    with fresh as same:
        assert same is fresh
        assert fresh.exec("echo up").stdout == "up\n"
    with pytest.raises(SandboxError, match="not started"):
        fresh.exec("true")
    fresh.stop()  # idempotent
