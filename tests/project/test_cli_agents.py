"""``skillctl agents``: every agent with its folders for this machine and whether it is here."""

from __future__ import annotations

import json

from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.project.agents import load_agents


def _run(tmp_path, *args, **env):
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir(exist_ok=True)
    bin_dir.mkdir(exist_ok=True)
    environ = {"HOME": str(home), "PATH": str(bin_dir), "XDG_CONFIG_HOME": "", "CLAUDE_CONFIG_DIR": "", **env}
    result = CliRunner().invoke(cli, ["agents", "--project", str(tmp_path / "proj"), *args], env=environ, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_json_lists_every_agent_with_resolved_folders_and_detection(tmp_path):
    (tmp_path / "home/.claude").mkdir(parents=True)
    codex = tmp_path / "bin/codex"
    codex.parent.mkdir()
    codex.write_text("#!/bin/sh\n")
    codex.chmod(0o755)
    rows = json.loads(_run(tmp_path, "--format", "json", CLAUDE_CONFIG_DIR=str(tmp_path / "home/.claude")).stdout)
    assert [r["name"] for r in rows] == list(load_agents())
    by_name = {r["name"]: r for r in rows}
    assert by_name["claude-code"]["user_folder"] == str(tmp_path / "home/.claude/skills")
    assert by_name["claude-code"]["user_env"] == ["CLAUDE_CONFIG_DIR"]
    assert by_name["claude-code"]["project_folder"] == str(tmp_path / "proj/.claude/skills")
    assert {n for n, r in by_name.items() if r["detected"]} == {"claude-code", "codex"}
    assert "cursor" in by_name["codex"]["shares_project_folder_with"]
    assert by_name["codex"]["docs"].startswith("https://")


def test_text_shows_a_row_per_agent_and_detected_filters(tmp_path):
    (tmp_path / "home/.config/goose").mkdir(parents=True)
    out = _run(tmp_path).stdout.splitlines()
    assert out[0].split()[:3] == ["AGENT", "HERE", "PROJECT"]
    goose = next(line for line in out if line.startswith("goose "))
    assert goose.split()[1:] == ["yes", ".agents/skills", str(tmp_path / "home/.config/goose/skills")]
    assert out[-1].startswith(f"{len(load_agents())} agents, 1 detected here")
    only = _run(tmp_path, "--detected").stdout.splitlines()
    assert [line.split()[0] for line in only[1:-1]] == ["goose"]
