"""Shared by the MCP client tests: how to name the independent test server as a registry URL.

No ``__init__.py`` here on purpose: a package named ``mcp`` under ``tests/`` (which is on
``sys.path``) would shadow the SDK's ``mcp``; a plain folder does not, since a regular package wins.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Callable

import pytest

SERVER = Path(__file__).parent / "independent_server.py"
ROOT = Path(__file__).parent.parent.parent


@pytest.fixture(scope="session")
def stdio_url() -> Callable[..., str]:
    """``stdio_url("good")`` → ``mcp+stdio:<python> independent_server.py good``."""
    return lambda *scenario: "mcp+stdio:" + shlex.join([sys.executable, str(SERVER), *scenario])


@pytest.fixture(scope="session")
def checkout_root() -> Path:
    """This checkout, for PYTHONPATH: the servers and CLIs the tests start run this code."""
    return ROOT
