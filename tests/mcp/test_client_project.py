"""MCP servers as a project's source, through the CLI: ``pull --registry mcp+stdio:…`` (a real
process, so its terminal is the user's), ``add`` + ``lock`` + ``install --frozen`` refusing a file
the server changed, two servers serving the same URI, a name two skills share."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from cli_results import run_in


def skill_folder(root: Path, name: str, body: str = "data\n") -> Path:
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill\nmetadata:\n  version: 1.0.0\n---\n# {name}\n")
    (folder / "data.txt").write_text(body)
    (folder / "scripts" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    return folder


run = run_in


def error_line(result: Result) -> str:
    errors = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, result.output
    return errors[0]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checkout_root: Path) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SKILLCTL_REGISTRY", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(checkout_root))
    return tmp_path


def test_pull_from_a_stdio_server_unpacks_verified_files_and_keeps_its_stderr_off_the_terminal(tmp_path: Path, stdio_url,
                                                                                              checkout_root: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(checkout_root)}
    done = subprocess.run([sys.executable, "-m", "skillctl", "pull", "refunds", "--registry", stdio_url("good"), "-o",
                           str(tmp_path / "out"), "--format", "json"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "independent server starting" not in done.stderr + done.stdout
    pulled = json.loads(done.stdout)
    assert pulled["id"] == "skill://acme/billing/refunds/SKILL.md"
    assert (tmp_path / "out" / "refunds" / "examples" / "email.md").read_bytes() == b"Dear\n"


def test_add_lock_and_a_frozen_install_refuse_a_file_the_server_changed(home: Path, stdio_url) -> None:
    served, project = home / "served", home / "project"
    project.mkdir()
    skill_folder(served, "alpha")
    server = stdio_url("folder", str(served))
    run(project, "add", server)
    entry = (project / "skills.yaml").read_text()
    assert "uri: skill://alpha/SKILL.md" in entry and "version: ^1.0.0" in entry
    locked = json.loads((project / "skills.lock").read_text())["skills"]["alpha"]
    assert locked["id"] == "skill://alpha/SKILL.md" and locked["manifest"].startswith("sha256:")
    installed = project / ".agents" / "skills" / "alpha"
    assert (installed / "data.txt").read_text() == "data\n"
    assert os.access(installed / "scripts" / "run.sh", os.X_OK)

    (served / "alpha" / "data.txt").write_text("changed behind the lock\n")
    shutil.rmtree(project / ".agents")
    refused = run(project, "install", "--frozen", ok=False)
    assert "the server now serves other files for skill://alpha/SKILL.md than skills.lock pins" in error_line(refused)
    assert not (project / ".agents").exists()  # nothing written
    run(project, "lock")  # accepting the change is a lock
    run(project, "install", "--frozen")
    assert (installed / "data.txt").read_text() == "changed behind the lock\n"


def test_two_servers_serving_the_same_uri_are_two_skills_and_never_replace_each_other(home: Path, stdio_url) -> None:
    project = home / "project"
    project.mkdir()
    skill_folder(home / "one", "alpha", "one\n")
    skill_folder(home / "two", "alpha", "two\n")
    first, second = stdio_url("folder", str(home / "one")), stdio_url("folder", str(home / "two"))
    run(project, "add", first)
    before = (project / "skills.yaml").read_text(), (project / "skills.lock").read_text()
    refused = run(project, "add", second, ok=False)
    assert "already has a skill named alpha from another source; refusing to replace it" in error_line(refused)
    assert ((project / "skills.yaml").read_text(), (project / "skills.lock").read_text()) == before
    run(project, "add", first)  # the same skill again is fine


def test_a_name_two_skills_share_is_refused_naming_both_and_a_skill_path_chooses(home: Path, stdio_url) -> None:
    project = home / "project"
    project.mkdir()
    server = stdio_url("hostile")
    refused = run(project, "add", server, "--skill", "tally", ok=False)
    line = error_line(refused)
    assert "serves 2 skills named tally (skill://tally/SKILL.md, skill://tools/tally/SKILL.md)" in line
    assert "--skill tally" in line or "--skill tools/tally" in line
    assert not (project / "skills.yaml").exists()
    run(project, "add", server, "--skill", "tools/tally")
    assert "uri: skill://tools/tally/SKILL.md" in (project / "skills.yaml").read_text()


def test_a_server_whose_command_is_missing_is_one_line(home: Path) -> None:
    project = home / "project"
    project.mkdir()
    refused = run(project, "add", "mcp+stdio:" + shlex.join([str(home / "no-such-server")]), ok=False)
    assert "cannot connect to the MCP server" in error_line(refused)
    assert not (project / "skills.yaml").exists()


def test_under_a_policy_requiring_signatures_an_mcp_skill_is_remote_and_unsigned_never_a_local_folder(home: Path,
                                                                                                      stdio_url) -> None:
    project = home / "project"
    (project / "keys").mkdir(parents=True)
    run(project / "keys", "key", "generate", "team")
    policy = "trust:\n  keys: [keys/team.pub]\n  require_signatures: true\n"
    (project / "skills.yaml").write_text(policy)
    refused = run(project, "add", stdio_url("good"), "--skill", "refunds", ok=False)
    line = error_line(refused)
    assert "refused by the trust policy: refunds@0.0.0 is not signed" in line
    assert "allow-local-skills" not in line  # not offered the way out a folder on this machine has
    assert (project / "skills.yaml").read_text() == policy and not (project / "skills.lock").exists()
