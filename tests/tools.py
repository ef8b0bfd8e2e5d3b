"""Command-line tools some tests drive (zip, git, openssl, tar): skipped with the reason when
missing on a developer machine, a failure on CI, where ``scripts/setup.sh --tests`` installs them and a
silent skip would hide a broken set-up. And ``MEASURE``, for measuring a child's own peak memory."""

from __future__ import annotations

import shutil

import pytest

from sandbox_fixtures import on_ci


def require_tool(command: str, package: str | None = None) -> None:
    if shutil.which(command) is not None:
        return
    reason = f"{command} is not installed (apt-get install {package or command})"
    pytest.fail(reason) if on_ci() else pytest.skip(reason)


# Runs a command and writes "PID PEAK_KIB" of it to the file named first. Why a go-between: on
# Linux a process's ru_maxrss starts at the peak of the process it was forked from (and survives
# exec), so a child of the test process would report this test session's size, not its own.
MEASURE = """\
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{proc.pid} {usage.ru_maxrss}")
sys.exit(os.waitstatus_to_exitcode(status))
"""
