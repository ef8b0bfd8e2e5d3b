"""Fixtures for many runs: a copy of the example skill ``tally`` with evals, scripted agents and
judges, and user folders kept inside the test's temp dir."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from model_server import model_server  # noqa: F401 - the loopback model server fixture, per test

REPO = Path(__file__).resolve().parents[2]
TALLY = REPO / "skills" / "tally"
# The agent's script: count with the skill's script (there only with the skill), write the count.
COUNT_WITH_SKILL = ("python3 /skills/tally/scripts/tally.py --json notes.txt "
                    "| python3 -c 'import json,sys; print(json.load(sys.stdin)[\"words\"])' > count.txt")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("SKILLCTL_REGISTRY", raising=False)
    monkeypatch.delenv("SKILLCTL_MODEL", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def write_yaml(path: Path, steps: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"steps": steps}, sort_keys=False), "utf-8")
    return path


def verdict(v: str, evidence: str) -> dict[str, Any]:
    """A scripted judge's turn: a call of the grade tool."""
    return {"tool": "grade", "arguments": {"verdict": v, "evidence": evidence}}


def tally_with_evals(tmp_path: Path, cases: list[dict[str, Any]] | None = None, version: str = "1.0.0") -> Path:
    """A copy of tally (metadata.version = ``version``) with evals/evals.json and one input file."""
    skill = tmp_path / "skills" / "tally"
    shutil.copytree(TALLY, skill)
    md = skill / "SKILL.md"
    md.write_text(md.read_text("utf-8").replace('version: "1.0.0"', f'version: "{version}"'), "utf-8")
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "evals" / "files" / "notes.txt").write_text("one two three four\n", "utf-8")
    if cases is None:
        cases = [
            {"id": 1, "prompt": "How many words are in notes.txt? Write the count to count.txt.",
             "expected_output": "4, in count.txt", "files": ["evals/files/notes.txt"],
             "expectations": ["The answer gives the word count",
                              {"text": "count.txt holds 4", "check": "grep -qx 4 count.txt"}]},
            {"id": "greeting", "prompt": "Say hello.", "expected_output": "A greeting."},
        ]
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "tally", "evals": cases}, indent=1), "utf-8")
    return skill
