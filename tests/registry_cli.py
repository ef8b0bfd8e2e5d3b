"""The registry commands through click, each test in its own folder with its own registry
(SKILLCTL_REGISTRY, not there until something creates it), HOME and data folder, so nothing
can leak into the user's default registry. Shared by the ``test_cli_*`` files of the registry
commands: import ``isolated`` (autouse) together with the helpers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from skillctl.cli import cli


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "data"))
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.delenv("SKILLCTL_PROFILE", raising=False)
    return tmp_path


def run(*args: object, ok: bool = True) -> Result:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert "Traceback" not in result.output
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 1, result.output
    return result


def as_json(result: Result):
    return json.loads(result.stdout)


def error_line(result: Result) -> str:
    """The one line a failure prints (click's 'Error: …')."""
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


def sha256_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
