"""Finding skills: a skill folder, its SKILL.md, or a repository of skills at any depth."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.skill.validate import discover

from .helpers import check, make_skill, only


@pytest.fixture
def repo(in_tmp: Path) -> Path:
    """skills/a, skills/b, skills/group/c, plus places where no skill must be found."""
    skills = in_tmp / "skills"
    make_skill(skills, name="b")
    make_skill(skills, name="a")
    make_skill(skills / "group", name="c")
    make_skill(skills / ".hidden", name="h")  # hidden folders are not searched
    make_skill(skills / "node_modules", name="n")  # nor junk folders
    make_skill(skills / "group" / "__pycache__", name="p")
    # a skill inside a skill is part of the outer skill (its files), not a skill of its own
    make_skill(skills / "a" / "references", name="inner")
    (skills / "empty" / "deeper").mkdir(parents=True)
    return skills


def test_repo_walk_finds_every_skill_in_path_order(repo: Path) -> None:
    reports = check("skills")
    assert [r.path for r in reports] == ["skills/a", "skills/b", "skills/group/c"]
    assert [r.name for r in reports] == ["a", "b", "c"]


def test_nested_skill_is_not_searched_inside_a_skill(repo: Path) -> None:
    report = only(check("skills/a"))
    assert report.path == "skills/a"
    assert report.skill is not None and "references/inner/SKILL.md" in report.skill.files


def test_skill_md_path_validates_its_folder(repo: Path) -> None:
    report = only(check("skills/group/c/SKILL.md"))
    assert (report.path, report.name) == ("skills/group/c", "c")
    assert report.diagnostics == ()


def test_skill_md_in_the_current_folder(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo / "a")
    assert [(r.path, r.diagnostics) for r in check("SKILL.md")] == [(".", ())]
    assert [(r.path, r.diagnostics) for r in check(".")] == [(".", ())]


def test_parent_folder_reference_uses_the_real_folder_name(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `validate ..` from inside a skill: the name is compared with "a", not with ".."
    monkeypatch.chdir(repo / "a" / "references")
    report = only(check(".."))
    assert (report.path, report.diagnostics) == ("..", ())


def test_several_paths_each_skill_once(repo: Path) -> None:
    reports = check("skills/group", "skills", "skills/a/SKILL.md", "skills/a")
    assert [r.path for r in reports] == ["skills/group/c", "skills/a", "skills/b"]


def test_the_same_missing_path_twice_is_reported_once(in_tmp: Path) -> None:
    reports = check("nothing", "nothing")
    assert [(r.path, [d.code for d in r.diagnostics]) for r in reports] == [("nothing", ["SK012"])]


def test_folder_without_skills(repo: Path) -> None:
    [d] = only(check("skills/empty")).diagnostics
    assert (d.code, d.file) == ("SK012", "skills/empty")
    assert "no skills found" in d.message


def test_a_file_that_is_not_skill_md(in_tmp: Path) -> None:
    (in_tmp / "notes.txt").write_text("hello\n")
    [d] = only(check("notes.txt")).diagnostics
    assert d.code == "SK012" and "skill folder" in d.message


def test_lowercase_skill_md_is_discovered_and_reported(in_tmp: Path) -> None:
    folder = make_skill(in_tmp / "skills", name="x")
    (folder / "SKILL.md").rename(folder / "skill.md")
    [d] = only(check("skills")).diagnostics
    assert (d.code, d.file) == ("SK002", "skills/x/skill.md")


def test_discover_yields_folders_not_reports(repo: Path) -> None:
    found = list(discover(Path("skills")))
    assert [(str(f), shown, problem) for f, shown, problem in found] == [
        ("skills/a", "skills/a", None),
        ("skills/b", "skills/b", None),
        ("skills/group/c", "skills/group/c", None),
    ]


def test_example_repository_layout_is_a_first_class_case(in_tmp: Path) -> None:
    # a repository root holding skills/ next to other project folders
    make_skill(in_tmp / "proj" / "skills", name="one")
    (in_tmp / "proj" / "src").mkdir()
    (in_tmp / "proj" / "README.md").write_text("# proj\n")
    (in_tmp / "proj" / ".git" / "objects").mkdir(parents=True)
    assert [r.path for r in check("proj")] == ["proj/skills/one"]
