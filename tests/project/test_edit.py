"""Editing skills.yaml keeps what a person wrote: comments, blank lines, quoting, order; a broken
edit is never written; a failed add or remove leaves both files as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.errors import LockError, NotFoundError
from skillctl.project import edit
from skillctl.project.adding import add_to_project, remove_from_project

ORIGINAL = """\
# Skills for the data team. Ask #data before adding one.
registries:
  default: /srv/skills   # the team's registry

skills:
  # counting words
  tally: "^1.0"
  csv-sql: {registry: default, version: '~2.0'}   # keep on 2.x

targets: [claude-code]
"""


def test_setting_and_removing_an_entry_keeps_comments_and_order(tmp_path: Path) -> None:
    path = tmp_path / "skills.yaml"
    path.write_text(ORIGINAL)
    edit.set_entry(path, "helper", {"path": "./skills/helper"})
    text = path.read_text()
    assert text.startswith(ORIGINAL.split("targets:")[0].rstrip("\n").rsplit("\n", 1)[0])  # everything before kept
    for kept in ("# Skills for the data team", "# the team's registry", "# counting words", "# keep on 2.x", 'tally: "^1.0"',
                 "version: '~2.0'", "targets: [claude-code]"):
        assert kept in text
    assert "helper: {path: ./skills/helper}" in text
    assert text.index("csv-sql") < text.index("helper") < text.index("targets")
    edit.remove_entry(path, "helper")
    assert path.read_text() == ORIGINAL
    edit.remove_entry(path, "tally")
    assert "tally" not in path.read_text() and "# Skills for the data team" in path.read_text()


def test_a_new_project_file_gets_just_a_skills_section(tmp_path: Path) -> None:
    path = tmp_path / "skills.yaml"
    edit.set_entry(path, "tally", "^1.2.0")
    assert path.read_text() == "skills:\n  tally: ^1.2.0\n"
    edit.add_targets(path, ["codex", "claude-code", "codex"])
    assert path.read_text().endswith("targets: [codex, claude-code]\n")


def test_an_edit_is_refused_when_the_file_is_not_yaml_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "skills.yaml"
    path.write_text("skills: [unclosed\n")
    with pytest.raises(LockError, match="cannot be edited") as exc:
        edit.set_entry(path, "tally", "^1")
    assert "\n" not in str(exc.value) and path.read_text() == "skills: [unclosed\n"
    path.write_text("skills: {}\n")
    with pytest.raises(LockError, match="no skill 'tally' declared"):
        edit.remove_entry(path, "tally")


def test_add_and_remove_through_the_workflow(reg, published, project, workspace) -> None:
    (project / "skills.yaml").write_text("# ours\nskills:\n  beta: ^0.3  # pinned low\n")
    with workspace() as ws:
        result = add_to_project(ws, "alpha", skills=[], take_all=False, agents=[])
    assert result.added == {"alpha": {"registry": str(reg.root), "version": "^2.0.0"}}
    text = (project / "skills.yaml").read_text()
    assert "# ours" in text and "# pinned low" in text
    assert [m.line() for m in result.moves] == ["added alpha@2.0.0", "added beta@0.3.0"]  # no lock before
    with workspace() as ws:
        lock, moves = remove_from_project(ws, ["alpha"])
    assert [m.line() for m in moves] == ["removed alpha@2.0.0"] and list(lock.by_name()) == ["beta"]
    assert "alpha" not in (project / "skills.yaml").read_text() and "# pinned low" in (project / "skills.yaml").read_text()


def test_a_failed_add_changes_neither_file(reg, published, project, workspace) -> None:
    (project / "skills.yaml").write_text("skills:\n  beta: ^0.3\n")
    with workspace() as ws:
        ws.lock()
    before = (project / "skills.yaml").read_bytes(), (project / "skills.lock").read_bytes()
    with workspace() as ws, pytest.raises(NotFoundError):
        add_to_project(ws, "gamma", skills=[], take_all=False, agents=[])
    # alpha resolves, but locking the project fails on another entry: alpha's entry is taken back
    (project / "skills.yaml").write_text("skills:\n  beta: ^0.3\n  gamma: ^1\n")
    with workspace() as ws, pytest.raises(NotFoundError, match="gamma"):
        add_to_project(ws, "alpha@^1", skills=[], take_all=False, agents=[])
    assert (project / "skills.yaml").read_text() == "skills:\n  beta: ^0.3\n  gamma: ^1\n"
    assert (project / "skills.lock").read_bytes() == before[1]


def test_add_of_a_folder_of_several_skills_needs_a_choice(project, workspace, monkeypatch) -> None:
    from registry.helpers import write_skill

    write_skill(project / "skills", "one", "1.0.0")
    write_skill(project / "skills", "two", "1.0.0")
    monkeypatch.chdir(project)  # a folder given to add is where the user's shell is
    with workspace() as ws:
        with pytest.raises(Exception, match=r"holds 2 skills \(one, two\); choose with --skill NAME"):
            add_to_project(ws, "./skills", skills=[], take_all=False, agents=[])
    with workspace() as ws:
        result = add_to_project(ws, "./skills", skills=["two"], take_all=False, agents=[])
    assert result.added == {"two": {"path": "./skills/two"}}
    assert result.lock.by_name()["two"].source == {"kind": "path", "path": "./skills/two"}
