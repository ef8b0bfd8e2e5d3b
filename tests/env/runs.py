"""Driving the CLI the way a user does in the environment tests: publish skills to a folder
registry, run them with the scripted model, and read what their commands printed."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from skillctl.cli import cli


def invoke(env, *args):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def publish(env, folder: Path, *extra: str):
    result = invoke(env, "publish", str(folder), *extra)
    assert result.exit_code == 0, result.output


def make_skill(root: Path, name: str, script: str, extra: dict[str, str] | None = None) -> Path:
    skill = root / name
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Test skill {name}.\nmetadata:\n  version: \"1.0.0\"\n---\nRun scripts/run.py.\n")
    (skill / "scripts" / "run.py").write_text(script)
    (skill / "scripts" / "run.py").chmod(0o755)
    for rel, text in (extra or {}).items():
        (skill / rel).write_text(text)
    return skill


def scripted(tmp_path: Path, commands: list[str]) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump({"steps": [{"shell": commands}, {"answer": "done"}]}), "utf-8")
    return f"script:{path}"


def run_outputs(env, tmp_path, *args, commands):
    transcript = tmp_path / "t.jsonl"
    result = invoke(env, "run", *args, "--model", scripted(tmp_path, commands), "--transcript", str(transcript),
                    "--format", "json", "task")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    outputs = [o["stdout"] + o["stderr"] for r in records for o in (r.get("details") or {}).get("output", [])]
    return result, "\n".join(outputs)
