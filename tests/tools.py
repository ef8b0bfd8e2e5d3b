"""Command-line tools some tests drive (zip, git, openssl, tar): skipped with the reason when
missing on a developer machine, a failure on CI (``CI`` set), where ``scripts/setup.sh`` installs
them and a silent skip would hide a broken set-up."""

from __future__ import annotations

import os
import shutil

import pytest


def require_tool(command: str, package: str | None = None) -> None:
    if shutil.which(command) is not None:
        return
    reason = f"{command} is not installed (apt-get install {package or command})"
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(reason)
    pytest.skip(reason)
