"""The agents table: valid against its schema, and resolved into folders as each agent's docs say
(environment overrides, shared folders written once, unknown names refused in one line)."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from skillctl.errors import ConfigError
from skillctl.project import agents as agents_mod
from skillctl.project.agents import DEFAULT_TARGET, Target, detect, find_agent, load_agents, target_folders


def _schema() -> dict:
    return json.loads(resources.files("skillctl.project").joinpath("agents.schema.json").read_text("utf-8"))


def test_the_shipped_table_is_valid_against_its_schema():
    validator = Draft202012Validator(_schema())
    Draft202012Validator.check_schema(_schema())
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(agents_mod.read_table())]
    assert problems == []


def test_the_schema_refuses_folders_that_escape_the_project_or_home():
    validator = Draft202012Validator(_schema())
    table = agents_mod.read_table()
    for bad_project in ["../skills", "/etc/skills", ".claude/../../x", "a\\b", ""]:
        broken = json.loads(json.dumps(table))
        broken["agents"][0]["project"] = bad_project
        assert not validator.is_valid(broken), bad_project
    for bad_user in ["relative/skills", "~/../etc", {"env": [{"var": "X", "path": "../up"}], "default": "~/.x"}]:
        broken = json.loads(json.dumps(table))
        broken["agents"][0]["user"] = bad_user
        assert not validator.is_valid(broken), bad_user


def test_the_table_has_twenty_agents_checked_against_their_own_docs_and_unique_names():
    table = load_agents()
    assert len(table) >= 20
    assert sum(a.checked == "agent-docs" for a in table.values()) >= 20
    names = [n for a in table.values() for n in (a.name, *a.aliases)]
    assert len(names) == len(set(names))
    assert list(table) == sorted(table)
    for agent in table.values():
        assert agent.docs.startswith("https://")
        if agent.checked != "agent-docs":
            assert "vercel-labs/skills" in agent.docs


def test_well_known_agents_have_their_documented_folders(tmp_path):
    env = {"HOME": str(tmp_path)}
    table = load_agents()
    assert table["claude-code"].project == ".claude/skills"
    assert table["claude-code"].user_folder(env) == tmp_path / ".claude/skills"
    assert table["goose"].user_folder(env) == tmp_path / ".config/goose/skills"
    assert table["kiro"].project == ".kiro/skills"
    for shared in ("codex", "cursor", "gemini-cli", "github-copilot", "amp", "opencode"):
        assert table[shared].project == DEFAULT_TARGET, shared
    assert table["gemini-cli"].user_folder(env) == tmp_path / ".gemini/skills"
    assert table["github-copilot"].user_folder(env) == tmp_path / ".copilot/skills"
    assert table["cursor"].user_folder(env) == tmp_path / ".cursor/skills"


def test_environment_overrides_move_user_folders(tmp_path):
    claude, xdg, crush = tmp_path / "claude-config", tmp_path / "xdg", tmp_path / "crush-skills"
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(claude), "XDG_CONFIG_HOME": str(xdg)}
    table = load_agents()
    assert table["claude-code"].user_folder(env) == claude / "skills"
    assert table["goose"].user_folder(env) == xdg / "goose/skills"
    assert table["opencode"].user_folder(env) == xdg / "opencode/skills"
    assert table["crush"].user_folder(env) == xdg / "crush/skills"
    assert table["crush"].user_folder({**env, "CRUSH_SKILLS_DIR": str(crush)}) == crush  # the folder itself
    # Codex's docs make ~/.agents/skills its user folder; CODEX_HOME no longer moves it
    assert table["codex"].user_folder({**env, "CODEX_HOME": str(tmp_path / "codex")}) == tmp_path / "home/.agents/skills"


def test_a_relative_override_is_refused_except_xdg_which_is_ignored_as_its_spec_says(tmp_path):
    table = load_agents()
    with pytest.raises(ConfigError, match=r"^CLAUDE_CONFIG_DIR='rel/dir' is not an absolute path"):
        table["claude-code"].user_folder({"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": "rel/dir"})
    assert table["goose"].user_folder({"HOME": str(tmp_path), "XDG_CONFIG_HOME": "rel"}) == tmp_path / ".config/goose/skills"


def test_user_scope_without_a_home_is_one_line():
    with pytest.raises(ConfigError, match=r"^HOME is not set to an absolute folder"):
        target_folders(["claude-code"], user=True, project_root=Path("."), environ={})


def test_a_folder_shared_by_several_agents_appears_once_listing_them(tmp_path):
    targets = target_folders(["codex", "claude-code", "cursor", "gemini", "codex"], user=False,
                             project_root=tmp_path, environ={"HOME": str(tmp_path)})
    assert targets == [
        Target(tmp_path / ".agents/skills", ("codex", "cursor", "gemini-cli"), tmp_path),
        Target(tmp_path / ".claude/skills", ("claude-code",), tmp_path),
    ]
    user = target_folders(["codex", "openhands", "amp", "kimi-cli"], user=True, project_root=tmp_path,
                          environ={"HOME": str(tmp_path)})
    assert [(t.path, t.agents) for t in user] == [
        (tmp_path / ".agents/skills", ("codex", "openhands")),
        (tmp_path / ".config/agents/skills", ("amp", "kimi-cli")),
    ]


def test_no_agent_named_is_the_default_folder(tmp_path):
    assert target_folders([], user=False, project_root=tmp_path, environ={}) == [Target(tmp_path / ".agents/skills", (), tmp_path)]
    home = tmp_path / "home"
    assert target_folders([], user=True, project_root=tmp_path, environ={"HOME": str(home)}) == [
        Target(home / ".agents/skills", (), None)  # a user folder's path is the user's own
    ]


def test_unknown_agents_are_all_named_in_one_line_with_the_valid_ones(tmp_path):
    with pytest.raises(ConfigError) as err:
        target_folders(["claude-code", "clode", "nope"], user=False, project_root=tmp_path, environ={})
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("unknown agents 'clode', 'nope'; valid agents: adal, amp,")
    assert "claude-code" in message and "skillctl agents" in message
    assert find_agent("kiro-cli").name == "kiro"  # vercel-labs/skills' name works as an alias


def test_detection_looks_at_the_agents_folders_and_commands_on_path(tmp_path):
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    env = {"HOME": str(home), "PATH": str(bin_dir)}
    home.mkdir()
    bin_dir.mkdir()
    assert not any(detect(env).values())
    (home / ".claude").mkdir()
    goose = bin_dir / "goose"
    goose.write_text("#!/bin/sh\n")
    goose.chmod(0o755)
    (tmp_path / "xdg/opencode").mkdir(parents=True)
    found = detect({**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert {name for name, here in found.items() if here} == {"claude-code", "goose", "opencode"}
    moved = detect({**env, "CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere")})
    assert moved["claude-code"] is False  # CLAUDE_CONFIG_DIR set: ~/.claude is not where it lives
    assert detect({"PATH": str(bin_dir)})["goose"] is True  # no HOME: commands still count


def test_describe_gives_each_agent_its_resolved_folders_even_without_home(tmp_path):
    rows = agents_mod.describe({}, tmp_path)
    by_name = {r["name"]: r for r in rows}
    assert by_name["claude-code"]["project_folder"] == str(tmp_path / ".claude/skills")
    assert by_name["claude-code"]["user_error"].startswith("HOME is not set")
    assert "codex" in by_name["cursor"]["shares_project_folder_with"]
    assert os.environ.get("HOME") is None or rows  # the listing never fails for lack of HOME


def test_the_documented_table_is_the_shipped_table():
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("agents_table", root / "scripts/agents_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (root / "docs" / "targets.md").read_text("utf-8")
    start = page.index("<!-- agents-table:start")
    start = page.index("\n", start) + 1
    end = page.index("<!-- agents-table:end -->")
    assert page[start:end].strip() == module.render(), "run python scripts/agents_table.py and paste its table into docs/targets.md"
