"""Nothing a command starts outlives it, in both backends, and commands beside it are untouched.

Every check runs right after ``exec`` returned, with no wait: the guarantee is that the
processes are already gone (killed and reaped) when it returns, however loaded the machine is.
The markers are odd sleep durations, so only the processes under test match.
"""

from __future__ import annotations

import io
import os
import random
import threading
import time
from pathlib import Path

import contextlib

import pytest

from skillctl.errors import SandboxError
from skillctl.sandbox.docker_backend import DockerSandbox
from skillctl.sandbox.local_backend import LocalSandbox


class Probe:
    """A started sandbox plus a way to list its processes whose command line holds a marker."""

    def __init__(self, sandbox, kind: str) -> None:
        self.sandbox, self.kind = sandbox, kind

    def leftovers(self, marker: str) -> list[str]:
        if self.kind == "docker":
            # Bracketed first digit: the pattern does not match the grep, or the sh running it.
            pattern = f"[{marker[0]}]{marker[1:]}"
            return self.sandbox.exec(f"ps -eo args= | grep -e '{pattern}' || true").stdout.splitlines()
        found = []
        for entry in Path("/proc").iterdir():
            try:
                args = (entry / "cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in args:
                found.append(args)
        return found


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.requires_docker), "local"])
def open_probe(request):
    """Opens a started sandbox of the parametrised backend with the given options."""

    @contextlib.contextmanager
    def opener(**options):
        if request.param == "docker":
            image = request.getfixturevalue("agent_image")
            client = request.getfixturevalue("docker_client")
            sandbox = DockerSandbox(image=image, client=client, kill_after_s=1.0, **options)
        else:
            sandbox = LocalSandbox(allow_unsafe_local=True, kill_after_s=1.0, warn_stream=io.StringIO(), **options)
        with sandbox:
            yield Probe(sandbox, request.param)

    return opener


@pytest.fixture
def probe(open_probe):
    with open_probe() as opened:
        yield opened


def _marker() -> str:
    # Unique per test run: the local backend shares the machine with other test runs.
    return f"{random.randint(100000, 999999)}.{os.getpid()}"


def test_background_processes_are_gone_when_the_command_exits(probe):
    m = _marker()
    result = probe.sandbox.exec(
        f"sleep {m} & nohup sleep {m} >/dev/null 2>&1 & setsid sleep {m} & (sleep {m} &); "
        f"sh -c 'setsid sh -c \"sleep {m}\" & exit 0'; echo started; exit 3"
    )
    assert (result.outcome_type, result.exit_code, result.stdout) == ("exit", 3, "started\n"), result
    assert probe.leftovers(m) == []


def test_detached_processes_are_gone_after_a_timeout(probe):
    m = _marker()
    result = probe.sandbox.exec(f"setsid sleep {m} & nohup setsid sleep {m} >/dev/null 2>&1 & sleep {m}", timeout_s=1)
    assert result.outcome_type == "timeout", result
    assert probe.leftovers(m) == []


def test_a_detached_spawner_is_stopped_while_it_spawns(probe):
    # Still forking when the command ends: the supervisor must go round until nothing is left.
    # Bounded (150 children), because the local backend has no process limit.
    m = _marker()
    result = probe.sandbox.exec(
        f"setsid sh -c 'i=0; while [ $i -lt 150 ]; do (sleep {m} &); i=$((i+1)); done; sleep {m}' & "
        f"while [ $(ps -eo args= | grep -c -e '[{m[0]}]{m[1:]}') -lt 5 ]; do :; done; echo spawning"
    )
    assert result.stdout == "spawning\n", result
    assert probe.leftovers(m) == []


def test_commands_running_beside_it_are_untouched(probe):
    # A long command with a background child runs while others leave processes behind and end
    # (by exit and by timeout). It must still see its child alive afterwards.
    m, other = _marker(), _marker()
    workspace = "/tmp" if probe.kind == "docker" else str(probe.sandbox.path("/tmp"))
    go, pidfile = f"{workspace}/go-{m}", f"{workspace}/pid-{m}"
    box: dict = {}

    def long_command() -> None:
        box["result"] = probe.sandbox.exec(
            f"sleep {m} & echo $! > {pidfile}; i=0; while [ ! -e {go} ]; do i=$((i+1)); "
            f"[ $i -gt 3000 ] && exit 9; sleep 0.05; done; kill -0 $(cat {pidfile}) && echo child-alive",
            timeout_s=300,
        )

    worker = threading.Thread(target=long_command)
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while not probe.sandbox.exec(f"test -s {pidfile}").ok:
            assert time.monotonic() < deadline, "the long command never started"
        assert probe.sandbox.exec(f"setsid sleep {other} & sleep {other} & exit 0").ok
        assert probe.sandbox.exec(f"setsid sleep {other} & sleep {other}", timeout_s=0.5).outcome_type == "timeout"
        results = probe.sandbox.exec_many([f"setsid sleep {other} & true", f"nohup sleep {other} >/dev/null 2>&1 &"])
        assert [r.exit_code for r in results] == [0, 0]
        assert probe.leftovers(other) == []
        # The long command's own child is still there (its sh, timeout and supervisor too).
        assert [line for line in probe.leftovers(m) if line.startswith("sleep")] == [f"sleep {m}"]
    finally:
        probe.sandbox.exec(f"touch {go}")
        worker.join(timeout=300)
    assert box["result"].stdout == "child-alive\n", box["result"]
    assert probe.leftovers(m) == []


@pytest.mark.requires_docker
def test_keep_background_keeps_services_in_the_container(agent_image, docker_client):
    with DockerSandbox(image=agent_image, client=docker_client, kill_after_s=1.0, keep_background=True) as sandbox:
        probe = Probe(sandbox, "docker")
        m, held, timed = _marker(), _marker(), _marker()
        # A service writing to a file, and one still holding the command's output: neither keeps
        # the command from ending, both stay.
        result = sandbox.exec(
            f"nohup setsid sleep {m} >/dev/null 2>&1 & (sleep {held}; echo late) & echo done; echo err >&2"
        )
        assert (result.exit_code, result.stdout, result.stderr) == (0, "done\n", "err\n"), result
        assert [line for line in probe.leftovers(m) if line.startswith("sleep")] == [f"sleep {m}"]
        assert [line for line in probe.leftovers(held) if line.startswith("sleep")] == [f"sleep {held}"]
        # A service started by an earlier command is untouched by a later one; a timeout still
        # takes everything the timed-out command started.
        result = sandbox.exec(f"nohup setsid sleep {timed} >/dev/null 2>&1 & sleep {timed}", timeout_s=0.5)
        assert result.outcome_type == "timeout"
        assert probe.leftovers(timed) == []
        assert [line for line in probe.leftovers(m) if line.startswith("sleep")] == [f"sleep {m}"]


def test_the_local_sandbox_refuses_to_keep_background_processes():
    with pytest.raises(SandboxError, match="keep_background is not available in the local sandbox"):
        LocalSandbox(allow_unsafe_local=True, keep_background=True)
