"""Command-line tools some tests drive (zip, git, openssl, tar): skipped with the reason when
missing on a developer machine, a failure on CI, where ``scripts/setup.sh`` installs them and a
silent skip would hide a broken set-up."""

from __future__ import annotations

import shutil

import pytest

from sandbox_fixtures import on_ci


def require_tool(command: str, package: str | None = None) -> None:
    if shutil.which(command) is not None:
        return
    reason = f"{command} is not installed (apt-get install {package or command})"
    pytest.fail(reason) if on_ci() else pytest.skip(reason)
