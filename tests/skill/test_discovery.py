"""Finding skills: a skill folder, its SKILL.md, or a repository of skills laid out as projects
keep them (hidden client folders included), within the search's bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.skill.discovery import SKIPPED_FOLDERS, Found, SearchLimits, discover
from skillctl.skill.validate import validate_paths

from .helpers import check, codes, make_skill, only


@pytest.fixture
def repo(in_tmp: Path) -> Path:
    """skills/a, skills/b, skills/group/c, skills/.hidden/h, plus places where no skill must be found."""
    skills = in_tmp / "skills"
    make_skill(skills, name="b")
    make_skill(skills, name="a")
    make_skill(skills / "group", name="c")
    make_skill(skills / ".hidden", name="h")  # hidden folders are searched: projects keep skills there
    make_skill(skills / "node_modules", name="n")  # dependency trees, caches, VCS folders are not
    make_skill(skills / "group" / "__pycache__", name="p")
    # a skill inside a skill is part of the outer skill (its files), not a skill of its own
    make_skill(skills / "a" / "references", name="inner")
    (skills / "empty" / "deeper").mkdir(parents=True)
    return skills


def test_repo_walk_finds_every_skill_in_path_order(repo: Path) -> None:
    reports = check("skills")
    assert [r.path for r in reports] == ["skills/.hidden/h", "skills/a", "skills/b", "skills/group/c"]
    assert [r.name for r in reports] == ["h", "a", "b", "c"]


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
    assert [r.path for r in reports] == ["skills/group/c", "skills/.hidden/h", "skills/a", "skills/b"]


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
    assert all(isinstance(f, Found) for f in found)
    assert [(str(f), shown, problem) for f, shown, problem in found] == [
        ("skills/.hidden/h", "skills/.hidden/h", None),
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


# ------------------------------------------------------------------ where projects keep skills


@pytest.mark.parametrize(
    "where",
    [".agents/skills", ".claude/skills", ".github/skills", ".codex/skills", "skills/.curated", "skills/.system", "plugins/p/skills"],
)
def test_hidden_and_client_folders_are_searched(in_tmp: Path, where: str) -> None:
    make_skill(in_tmp / "proj" / where, name="found")
    (in_tmp / "proj" / "src" / "app").mkdir(parents=True)
    assert [(r.path, r.valid()) for r in check("proj")] == [(f"proj/{where}/found", True)]


def test_a_checkout_laid_out_like_openai_skills(in_tmp: Path) -> None:
    for group, names in {".curated": ["gh-fix-ci", "notion"], ".system": ["skill-creator"], ".experimental": ["linear"]}.items():
        for name in names:
            make_skill(in_tmp / "repo" / "skills" / group, name=name)
    (in_tmp / "repo" / ".github" / "workflows").mkdir(parents=True)
    assert [r.path for r in check("repo")] == [
        "repo/skills/.curated/gh-fix-ci",
        "repo/skills/.curated/notion",
        "repo/skills/.experimental/linear",
        "repo/skills/.system/skill-creator",
    ]


@pytest.mark.parametrize("skipped", [".git", ".hg", "node_modules", "__pycache__", ".venv", ".tox", ".mypy_cache", "site-packages"])
def test_vcs_caches_and_dependency_trees_are_not_searched(in_tmp: Path, skipped: str) -> None:
    assert skipped in SKIPPED_FOLDERS
    make_skill(in_tmp / "proj" / skipped / "pkg", name="vendored")
    make_skill(in_tmp / "proj" / "skills", name="mine")
    assert [r.path for r in check("proj")] == ["proj/skills/mine"]


def test_a_virtualenv_by_any_name_is_not_searched(in_tmp: Path) -> None:
    env = in_tmp / "proj" / "pyenv311"
    make_skill(env / "lib" / "site" / "x", name="inside-env")
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    make_skill(in_tmp / "proj" / "skills", name="mine")
    assert [r.path for r in check("proj")] == ["proj/skills/mine"]
    (env / "pyvenv.cfg").unlink()  # the same folder without the marker is searched
    assert [r.path for r in check("proj")] == ["proj/pyenv311/lib/site/x/inside-env", "proj/skills/mine"]


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        ((), ["proj/.claude/skills/c", "proj/skills/drafts/d", "proj/skills/experimental/e", "proj/skills/main/m"]),
        (("drafts",), ["proj/.claude/skills/c", "proj/skills/experimental/e", "proj/skills/main/m"]),
        (("skills/experimental/",), ["proj/.claude/skills/c", "proj/skills/drafts/d", "proj/skills/main/m"]),
        (("**/e", ".claude"), ["proj/skills/drafts/d", "proj/skills/main/m"]),
        (("skills/*", "!skills/main"), ["proj/.claude/skills/c", "proj/skills/main/m"]),
    ],
)
def test_exclude_uses_gitignore_patterns_relative_to_the_path(in_tmp: Path, patterns: tuple[str, ...], expected: list[str]) -> None:
    for group, name in (("skills/main", "m"), ("skills/drafts", "d"), ("skills/experimental", "e"), (".claude/skills", "c")):
        make_skill(in_tmp / "proj" / group, name=name)
    assert [r.path for r in validate_paths([Path("proj")], exclude=patterns)] == expected


def test_exclude_does_not_apply_to_a_skill_named_directly(in_tmp: Path) -> None:
    make_skill(in_tmp / "skills", name="drafts")
    assert [r.path for r in validate_paths([Path("skills/drafts")], exclude=["drafts"])] == ["skills/drafts"]
    assert codes(only(validate_paths([Path("skills")], exclude=["drafts"]))) == ["SK012"]


def test_depth_limit_is_reported_as_a_note(in_tmp: Path) -> None:
    make_skill(in_tmp / "repo" / "a" / "b", name="two")
    make_skill(in_tmp / "repo" / "a" / "b" / "two" / "refs", name="four")  # inside the skill "two": its files
    make_skill(in_tmp / "repo" / "x" / "y" / "z", name="four-deep")
    reports = validate_paths([Path("repo")], limits=SearchLimits(depth=3))
    assert [(r.path, codes(r)) for r in reports] == [
        ("repo/a/b/two", []),
        ("repo", ["SK302"]),
    ]
    note = reports[-1].diagnostics[0]
    assert note.severity == "info" and "e.g. x/y/z" in note.message and "3 folder levels" in note.message
    deeper = validate_paths([Path("repo")], limits=SearchLimits(depth=4))
    assert [r.path for r in deeper] == ["repo/a/b/two", "repo/x/y/z/four-deep"]


def test_folder_budget_is_reported_and_shallow_folders_come_first(in_tmp: Path) -> None:
    # breadth first: the budget is spent on the shallow levels, where skills live
    for i in range(5):
        (in_tmp / "repo" / "deep" / f"d{i}" / "e").mkdir(parents=True)
    make_skill(in_tmp / "repo", name="shallow")
    reports = validate_paths([Path("repo")], limits=SearchLimits(folders=4))
    assert [(r.path, codes(r), r.is_skill) for r in reports] == [("repo/shallow", [], True), ("repo", ["SK237"], False)]
    assert "searched 4 folders and stopped" in reports[-1].diagnostics[0].message
    assert not reports[-1].valid(strict=True) and reports[-1].valid()
