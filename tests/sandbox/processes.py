"""Finding the processes a test started, by a marker in their command line, through the sandbox
itself (``ps`` in the container, or on this machine for the local backend)."""

from __future__ import annotations

import os
import random

from skillctl.protocols import Sandbox


def marker() -> str:
    """An odd sleep duration, unique per test run: the local backend shares the machine."""
    return f"{random.randint(100000, 999999)}.{os.getpid()}"


def leftovers(sandbox: Sandbox, mark: str) -> list[str]:
    """Command lines of the processes holding ``mark`` (the bracket keeps grep and the shell
    running it from matching themselves)."""
    pattern = f"[{mark[0]}]{mark[1:]}"
    return sandbox.exec(f"ps -eo args= | grep -e '{pattern}' || true").stdout.splitlines()
