"""The team loop through the real command line: `add` writes skills.yaml (comments kept), locks
and installs into the agents' folders; a teammate's `sync` gets the same folders from the two
committed files; `outdated` and `update` move pins within their ranges; `remove` and `sync`
delete only what skillctl installed; edits in place are reported, not overwritten.

A real registry folder, real files; HOME points at a temporary folder so user scope stays here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from registry.helpers import write_skill
from skillctl.cli import cli
from skillctl.project.marker import MARKER
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "data"))
    monkeypatch.delenv("SKILLCTL_REGISTRY", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    registry = tmp_path / "team-registry"
    with LocalRegistry(registry) as reg:
        for name, version in (("tally", "1.0.0"), ("tally", "1.1.0"), ("csv-sql", "2.0.0")):
            reg.publish(prepare_folder(write_skill(tmp_path / "src" / f"{name}-{version}", name, version)))
    author, teammate = tmp_path / "author", tmp_path / "teammate"
    author.mkdir()
    teammate.mkdir()
    (author / "skills.yaml").write_text(f"# the data team's skills\nregistries:\n  default: {registry}  # shared\nskills: {{}}\n")
    return {"registry": registry, "author": author, "teammate": teammate, "src": tmp_path / "src"}


def run(where: Path, *args: object, ok: bool = True, monkeypatch: pytest.MonkeyPatch | None = None) -> Result:
    import os

    old = os.getcwd()
    os.chdir(where)
    try:
        result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert "Traceback" not in result.output
    assert (result.exit_code == 0) == ok, result.output
    return result


def publish(team: dict[str, Path], name: str, version: str) -> None:
    with LocalRegistry(team["registry"]) as reg:
        reg.publish(prepare_folder(write_skill(team["src"] / f"{name}-{version}", name, version)))


def files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_add_commit_sync_outdated_update_remove(team: dict[str, Path]) -> None:
    author, teammate = team["author"], team["teammate"]
    added = run(author, "add", "tally", "--agent", "claude-code")
    assert "added tally: ^1.1.0" in added.output
    text = (author / "skills.yaml").read_text()
    assert "# the data team's skills" in text and "# shared" in text and "tally: ^1.1.0" in text
    assert "targets: [claude-code]" in text
    assert (author / ".claude" / "skills" / "tally" / "SKILL.md").is_file()
    assert (author / ".claude" / "skills" / "tally" / MARKER).is_file()
    run(author, "add", "csv-sql@~2.0")
    lock = json.loads((author / "skills.lock").read_text())
    assert lock["skills"]["tally"]["source"] == {"kind": "registry", "registry": "default", "url": str(team["registry"])}

    # the teammate gets the two committed files and nothing else
    for name in ("skills.yaml", "skills.lock"):
        shutil.copy(author / name, teammate / name)
    synced = run(teammate, "sync")
    assert "wrote 2, removed 0" in synced.output
    assert files(teammate / ".claude" / "skills" / "tally") == files(author / ".claude" / "skills" / "tally")
    again = run(teammate, "sync", "--format", "json")
    assert [i["name"] for i in json.loads(again.stdout)["unchanged"]] == ["csv-sql", "tally"]

    # a new release inside the range: outdated says so, update moves exactly that pin
    publish(team, "tally", "1.2.0")
    publish(team, "tally", "2.0.0")
    rows = {r["name"]: r for r in json.loads(run(teammate, "outdated", "--format", "json").stdout)}
    assert (rows["tally"]["current"], rows["tally"]["wanted"], rows["tally"]["latest"]) == ("1.1.0", "1.2.0", "2.0.0")
    assert rows["tally"]["outdated"] and not rows["csv-sql"]["outdated"]
    table = run(teammate, "outdated").output
    assert "tally *" in table and "1.1.0" in table and "2.0.0" in table
    # lock alone changes nothing: the pin is still allowed
    assert "nothing changed" in run(teammate, "lock").output
    updated = run(teammate, "update", "tally")
    assert "tally 1.1.0 -> 1.2.0" in updated.output
    assert 'version: "1.2.0"' in (teammate / ".claude" / "skills" / "tally" / "SKILL.md").read_text()

    # remove: out of skills.yaml, the lock and the folder; a folder skillctl did not write stays
    mine = teammate / ".claude" / "skills" / "mine"
    write_skill(teammate / ".claude" / "skills", "mine", "0.1.0")
    removed = run(teammate, "remove", "tally")
    assert "tally" not in (teammate / "skills.yaml").read_text().split("skills:")[1]
    assert "tally" not in json.loads((teammate / "skills.lock").read_text())["skills"]
    assert not (teammate / ".claude" / "skills" / "tally").exists() and mine.is_dir()
    assert "removed" in removed.output


def test_sync_removes_only_marked_folders_and_reports_edits(team: dict[str, Path]) -> None:
    author = team["author"]
    run(author, "add", "tally")
    run(author, "add", "csv-sql")
    target = author / ".agents" / "skills"  # no targets: named: the shared default folder
    assert {p.name for p in target.iterdir()} == {"csv-sql", "tally"}
    write_skill(target, "hand-written", "0.1.0")
    (target / "csv-sql" / "SKILL.md").write_text((target / "csv-sql" / "SKILL.md").read_text() + "\nmy notes\n")

    # csv-sql leaves skills.yaml (edited by hand), then the lock
    (author / "skills.yaml").write_text((author / "skills.yaml").read_text().replace("  csv-sql: ^2.0.0\n", ""))
    run(author, "lock")
    dry = json.loads(run(author, "sync", "--dry-run", "--format", "json").stdout)
    assert dry["dry_run"] is True and [i["name"] for i in dry["edited"]] == ["csv-sql"] and dry["removed"] == []
    out = run(author, "sync")
    assert "edited in place, left alone" in out.output and (target / "csv-sql").is_dir()
    assert (target / "hand-written").is_dir() and (target / "tally").is_dir()
    # with --force the edited folder goes; the hand-written one never does
    run(author, "sync", "--force")
    assert not (target / "csv-sql").exists() and (target / "hand-written").is_dir()


def test_install_replaces_nothing_it_did_not_write_and_restores_with_force(team: dict[str, Path]) -> None:
    author = team["author"]
    run(author, "add", "tally")
    doc = author / ".agents" / "skills" / "tally" / "SKILL.md"
    doc.write_text("---\nname: tally\ndescription: changed by hand\n---\n")
    out = run(author, "install", "--frozen")
    assert "edited in place, left alone" in out.output and "changed by hand" in doc.read_text()
    run(author, "install", "--frozen", "--force")
    assert "changed by hand" not in doc.read_text()


def test_user_scope_writes_the_agents_user_folders(team: dict[str, Path], tmp_path: Path) -> None:
    author = team["author"]
    run(author, "add", "tally", "--no-sync")
    run(author, "install", "--agent", "claude-code", "--agent", "gemini-cli", "--user")
    assert (tmp_path / "home" / ".claude" / "skills" / "tally" / MARKER).is_file()
    assert (tmp_path / "home" / ".gemini" / "skills" / "tally" / MARKER).is_file()
    assert not (author / ".claude").exists()


def test_a_teammate_without_the_registry_gets_it_from_the_lock_or_a_hint(team: dict[str, Path], tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    author, teammate = team["author"], team["teammate"]
    (author / "skills.yaml").write_text("skills:\n  tally: ^1.1.0\n")  # no registries: section
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(team["registry"]))  # the author's own setting
    run(author, "lock")
    monkeypatch.delenv("SKILLCTL_REGISTRY")
    for name in ("skills.yaml", "skills.lock"):
        shutil.copy(author / name, teammate / name)
    run(teammate, "sync")  # the lock recorded where tally came from: found without the author's setting
    assert (teammate / ".agents" / "skills" / "tally" / MARKER).is_file()
    lock = json.loads((teammate / "skills.lock").read_text())
    lock["skills"]["tally"]["source"]["url"] = str(tmp_path / "gone")
    (teammate / "skills.lock").write_text(json.dumps(lock))
    assert "1 unchanged" in run(teammate, "sync").output  # nothing to fetch: the registry is not needed
    shutil.rmtree(teammate / ".agents" / "skills" / "tally")
    line = run(teammate, "sync", ok=False).output.strip().splitlines()[-1]
    assert str(tmp_path / "gone") in line and "registries" in line and "--registry" in line
