"""The unsafe local backend: refused unless asked for, and then a working Sandbox."""

from __future__ import annotations

import io
import tarfile
import time

import pytest

from skillctl.errors import ConfigError, SandboxError
from skillctl.protocols import Sandbox
from skillctl.sandbox import open_sandbox
from skillctl.sandbox.local_backend import LocalSandbox


def _tar(files: dict[str, bytes], mode: int = 0o644) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def local():
    warnings = io.StringIO()
    sandbox = LocalSandbox(allow_unsafe_local=True, warn_stream=warnings)
    with sandbox:
        sandbox.warnings = warnings  # type: ignore[attr-defined]
        yield sandbox


def test_refused_without_the_explicit_flag():
    with pytest.raises(SandboxError, match="without any isolation: pass allow_unsafe_local=True"):
        open_sandbox("local")
    with pytest.raises(SandboxError, match="allow_unsafe_local=True"):
        LocalSandbox(allow_unsafe_local="yes")  # type: ignore[arg-type]  # truthy is not enough


def test_unknown_backend_lists_the_valid_ones():
    with pytest.raises(SandboxError, match="unknown sandbox 'k8s': choose one of docker, local"):
        open_sandbox("k8s")


def test_bad_settings_are_one_line_errors():
    with pytest.raises(SandboxError, match="invalid settings for sandbox 'local'"):
        open_sandbox("local", allow_unsafe_local=True, colour="blue")
    with pytest.raises(ConfigError, match="unknown sandbox setting\\(s\\): colour; valid ones: .*memory"):
        open_sandbox("docker", colour="blue")


def test_warns_on_stderr_when_started(capsys):
    sandbox = open_sandbox("local", allow_unsafe_local=True)
    assert isinstance(sandbox, Sandbox)
    with sandbox:
        pass
    assert "nothing is isolated" in capsys.readouterr().err


def test_exec_runs_in_the_workspace_with_explicit_env(local):
    result = local.exec('pwd; echo "$GREETING"; exit 3', env={"GREETING": "hi"})
    assert result.outcome_type == "exit" and result.exit_code == 3
    assert result.stdout.splitlines() == [str(local.path("/workspace")), "hi"]
    assert "nothing is isolated" in local.warnings.getvalue()


def test_timeout_kills_the_whole_process_group(local, tmp_path):
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    result = local.exec(f"sleep 300 & echo $! > {pidfile}; wait", timeout_s=0.5)
    assert result.outcome_type == "timeout" and result.exit_code is None
    assert time.monotonic() - started < 60  # far below the 300 s it would take unkilled
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    assert _state(pid) in (None, "Z"), "the background child outlived the timeout"


def _state(pid: int) -> str | None:
    """The process's state letter, None if it is gone (a zombie, "Z", is dead but unreaped)."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except FileNotFoundError:
        return None
    return stat[stat.rfind(")") + 2]


def test_output_flood_is_capped():
    with LocalSandbox(allow_unsafe_local=True, max_capture_bytes=4096, warn_stream=io.StringIO()) as sandbox:
        result = sandbox.exec("head -c 5000000 /dev/zero | tr '\\0' a")
    assert result.stdout_dropped == 5_000_000 - 4096
    head, marker, tail = result.stdout.partition("\n[… 4995904 bytes not captured")
    assert marker and head == "a" * 2048 and tail.endswith("]\n" + "a" * 2048)


def test_exec_many_runs_concurrently_in_order(local, tmp_path):
    # A rendezvous instead of a stopwatch: both succeed only if they overlap.
    wait = "touch {d}/rv-{me}; i=0; while [ ! -e {d}/rv-{other} ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.05; done; echo {me}"
    results = local.exec_many([wait.format(d=tmp_path, me="a", other="b"), "echo second", wait.format(d=tmp_path, me="b", other="a")])
    assert [(r.exit_code, r.stdout) for r in results] == [(0, "a\n"), (0, "second\n"), (0, "b\n")]


def test_put_and_get_archive_round_trip(local):
    local.put_archive("/skills/demo", _tar({"scripts/run.sh": b"#!/bin/sh\necho ran\n"}, 0o755))
    assert local.exec(f"{local.skills_root}/demo/scripts/run.sh").stdout == "ran\n"
    assert local.exec('"$SKILLS_DIR"/demo/scripts/run.sh').stdout == "ran\n"
    with tarfile.open(fileobj=io.BytesIO(local.get_archive("/skills/demo")), mode="r") as archive:
        assert "demo/scripts/run.sh" in archive.getnames()


@pytest.mark.parametrize(
    "name, kind",
    [("../escape.txt", tarfile.REGTYPE), ("/etc/evil", tarfile.REGTYPE), ("link", tarfile.SYMTYPE)],
)
def test_put_archive_refuses_hostile_members(local, name, kind):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
        archive.addfile(info, io.BytesIO(b""))
    with pytest.raises(SandboxError, match="refused"):
        local.put_archive("/workspace", buf.getvalue())


def test_paths_outside_the_sandbox_are_refused(local):
    with pytest.raises(SandboxError, match="outside the local sandbox"):
        local.put_archive("/etc", _tar({"x": b""}))
    with pytest.raises(SandboxError, match="without '..'"):
        local.get_archive("/workspace/../../etc")
    with pytest.raises(SandboxError, match="no such file"):
        local.get_archive("/workspace/missing")


def test_not_started_and_bad_timeout_are_errors():
    sandbox = LocalSandbox(allow_unsafe_local=True, warn_stream=io.StringIO())
    with pytest.raises(SandboxError, match="not started"):
        sandbox.exec("true")
    with sandbox:
        with pytest.raises(SandboxError, match="positive"):
            sandbox.exec("true", timeout_s=0)


def test_stop_removes_the_folder():
    sandbox = LocalSandbox(allow_unsafe_local=True, warn_stream=io.StringIO())
    sandbox.start()
    root = sandbox.path("/workspace").parent
    assert root.is_dir()
    sandbox.stop()
    assert not root.exists()
    sandbox.stop()  # idempotent
