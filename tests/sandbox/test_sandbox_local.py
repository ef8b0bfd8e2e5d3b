"""The unsafe local backend: refused unless asked for, and what only it does (paths on this
machine, the warning). What every backend shares is in ``test_conformance.py``."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest
from bundle.archives import files_tar

from skillctl.errors import ConfigError, SandboxError
from skillctl.protocols import Sandbox
from skillctl.sandbox import open_sandbox
from skillctl.sandbox.local_backend import LocalSandbox


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
    with pytest.raises(SandboxError, match="not in an image; leave out the image \\(some:image\\)"):
        open_sandbox("local", allow_unsafe_local=True, image="some:image")
    with pytest.raises(ConfigError, match="unknown sandbox setting\\(s\\): colour; valid ones: .*memory"):
        open_sandbox("docker", colour="blue")


@pytest.mark.parametrize("dirs, message", [
    (["memory"], "'memory' is not a top-level folder"),
    (["/a/b"], "'/a/b' is not a top-level folder"),
    (["/workspace"], "'/workspace' is already a folder of the sandbox or the system"),
    (["/etc"], "'/etc' is already a folder"),
    (["/m", "/m"], "/m listed twice"),
])
def test_extra_folders_must_be_new_top_level_folders(dirs, message):
    for backend, extra in (("local", {"allow_unsafe_local": True}), ("docker", {})):
        with pytest.raises(ConfigError, match=f"invalid sandbox settings: extra_dirs: {message}"):
            open_sandbox(backend, extra_dirs=dirs, **extra)


def test_refuses_to_keep_background_processes():
    # A kept process would outlive the sandbox on this machine: no container ends it.
    with pytest.raises(SandboxError, match="keep_background is not available in the local sandbox"):
        LocalSandbox(allow_unsafe_local=True, keep_background=True)


def test_warns_on_stderr_when_started(capsys):
    sandbox = open_sandbox("local", allow_unsafe_local=True)
    assert isinstance(sandbox, Sandbox)
    with sandbox:
        pass
    assert "nothing is isolated" in capsys.readouterr().err


def test_output_flood_is_capped():
    with LocalSandbox(allow_unsafe_local=True, max_capture_bytes=4096, warn_stream=io.StringIO()) as sandbox:
        result = sandbox.exec("head -c 5000000 /dev/zero | tr '\\0' a")
    assert result.stdout_dropped == 5_000_000 - 4096
    head, marker, tail = result.stdout.partition("\n[… 4995904 bytes not captured")
    assert marker and head == "a" * 2048 and tail.endswith("]\n" + "a" * 2048)


def test_commands_run_together_share_the_step_capture():
    with LocalSandbox(allow_unsafe_local=True, max_capture_bytes=8192, max_step_capture_bytes=8 * 2048,
                      warn_stream=io.StringIO()) as sandbox:
        alone = sandbox.exec("head -c 100000 /dev/zero")
        together = sandbox.exec_many(["head -c 100000 /dev/zero"] * 4)
    assert alone.stdout_dropped == 100000 - 8192
    assert [r.stdout_dropped for r in together] == [100000 - 2048] * 4  # 8 streams share 16 KiB


def test_container_style_and_real_paths_name_the_same_folders(local):
    local.put_archive("/skills/demo", files_tar({"scripts/run.sh": b"#!/bin/sh\necho ran\n"}, 0o755))
    assert local.skills_root.startswith(str(Path(local.workspace).parent))  # a folder on this machine
    assert local.exec(f"{local.skills_root}/demo/scripts/run.sh").stdout == "ran\n"
    assert local.exec('"$SKILLS_DIR"/demo/scripts/run.sh').stdout == "ran\n"
    for path in ("/skills/demo", f"{local.skills_root}/demo"):
        with tarfile.open(fileobj=io.BytesIO(local.get_archive(path)), mode="r") as archive:
            assert "demo/scripts/run.sh" in archive.getnames()
    assert local.agent_path("/tmp/x") == str(Path(local.workspace).parent / "tmp" / "x")
    assert local.agent_user is None


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
    with pytest.raises(SandboxError, match="outside the local sandbox: use a path under /skills, /workspace, /tmp"):
        local.put_archive("/etc", files_tar({"x": b""}))
    with pytest.raises(SandboxError, match="outside the local sandbox"):
        local.agent_path("/memory")  # an extra folder exists only when asked for
    with pytest.raises(SandboxError, match="without '..'"):
        local.get_archive("/workspace/../../etc")
    with pytest.raises(SandboxError, match="no such file"):
        local.get_archive("/workspace/missing")


def test_stop_removes_the_folder():
    sandbox = LocalSandbox(allow_unsafe_local=True, warn_stream=io.StringIO())
    sandbox.start()
    root = Path(sandbox.workspace).parent
    assert root.is_dir()
    sandbox.stop()
    assert not root.exists()
    sandbox.stop()  # idempotent


CLEANUP_SCRIPT = textwrap.dedent(
    """
    import io, signal, sys, threading, time
    from skillctl.sandbox.local_backend import LocalSandbox

    def make():
        sb = LocalSandbox(allow_unsafe_local=True, warn_stream=io.StringIO())
        sb.start()
        return sb

    box = []
    worker = threading.Thread(target=lambda: box.append(make()))  # a batch worker starts one first
    worker.start()
    worker.join()
    print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)  # no handler from a thread
    main = make()  # then the main thread: the handlers go in now
    print(box[0].workspace, main.workspace, flush=True)
    time.sleep(120)
    """
)


def test_sandboxes_started_on_worker_threads_are_cleaned_up_on_sigterm(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(CLEANUP_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "True", proc.stderr.read()
        folders = [Path(p).parent for p in proc.stdout.readline().split()]
        assert len(folders) == 2 and all(f.is_dir() for f in folders)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM  # the signal's usual course, after the cleanup
    assert not any(f.exists() for f in folders)
