"""Fixtures for the skill model and validator tests: real folders on disk, the real CLI."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillctl.cli import cli

from .helpers import make_skill as _make_skill


@pytest.fixture
def make_skill():
    """``make_skill(root, name="demo", front_matter=None, body=None, files=None, ...)`` → folder.

    See ``helpers.make_skill`` for the layout (front matter on lines 2.., body from line 5).
    """
    return _make_skill


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from ``tmp_path`` so diagnostics show short relative paths (demo/SKILL.md)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def invoke(runner: CliRunner):
    """Run ``skillctl ARGS...`` in-process; exceptions stay inside the result (we assert on them)."""

    def run(*args: str):
        return runner.invoke(cli, [str(a) for a in args])

    return run


@pytest.fixture
def shared_tmp():
    """A temp folder uid 65534 can traverse (pytest's tmp_path lives under a 0700 folder)."""
    path = Path(tempfile.mkdtemp(prefix="skillctl-test-nobody-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)  # root: permissions do not stop it
