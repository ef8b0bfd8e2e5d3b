"""Building the command supervisor on the host, and what happens without a compiler."""

from __future__ import annotations

import io
import subprocess

import pytest

from skillctl.errors import SandboxError
from skillctl.sandbox import supervisor
from skillctl.sandbox.local_backend import LocalSandbox


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty cache, so that nothing built earlier is reused."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_built_once_per_source_and_statically_linked(fresh_cache):
    first = supervisor.build()
    assert first.name == "skillctl-supervise" and str(fresh_cache) in str(first)
    assert supervisor.build() == first  # cached
    described = subprocess.run(["file", str(first)], capture_output=True, text=True).stdout
    assert "statically linked" in described or "static-pie" in described, described


def test_usage_errors_and_exit_statuses(fresh_cache):
    binary = str(supervisor.build())
    for argv in ([binary], [binary, "--"], [binary, "--bogus", "--", "true"]):
        run = subprocess.run(argv, capture_output=True, text=True)
        assert run.returncode == 125 and "usage: skillctl-supervise" in run.stderr
    assert subprocess.run([binary, "--", "sh", "-c", "exit 7"]).returncode == 7
    assert subprocess.run([binary, "--", "sh", "-c", "kill -9 $$"]).returncode == 137
    missing = subprocess.run([binary, "--", "/nonexistent/program"], capture_output=True, text=True)
    assert missing.returncode == 127 and "cannot run the command" in missing.stderr


def test_no_compiler_is_one_clear_line(fresh_cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(SandboxError, match="CC=/nonexistent/cc is not an executable"):
        supervisor.build()
    monkeypatch.delenv("CC")
    monkeypatch.setenv("PATH", str(fresh_cache))  # no cc, no gcc
    with pytest.raises(SandboxError, match="no C compiler to build the command supervisor.*apt-get install -y gcc"):
        supervisor.build()


def test_a_source_that_does_not_compile_says_so(fresh_cache):
    broken = fresh_cache / "supervise.c"
    broken.write_text("int main(void) { return undefined_name; }\n")
    with pytest.raises(SandboxError, match="building the command supervisor with .* failed \\(.*undefined_name"):
        supervisor.build(broken)


def test_the_local_sandbox_without_a_compiler_warns_and_still_runs(fresh_cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    warnings = io.StringIO()
    with LocalSandbox(allow_unsafe_local=True, warn_stream=warnings) as sandbox:
        assert sandbox.exec("echo fine").stdout == "fine\n"
    assert "setsid, daemons) will not be killed: CC=/nonexistent/cc is not an executable" in warnings.getvalue()
