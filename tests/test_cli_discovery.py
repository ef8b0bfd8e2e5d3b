"""``validate``, ``pack`` and ``publish`` find the same skills in a repository laid out as
projects keep them, leave out what ``--exclude`` names, and report a search that stopped early;
``validate --format github`` speaks GitHub Actions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from skillctl.cli import cli

FM = 'name: {name}\ndescription: Skill {name}, for the discovery tests.\nmetadata:\n  version: "1.0.0"\n'


def write(root: Path, rel: str, name: str, extra: str = "", body: str = "\n# Skill\n\nDo it.\n") -> None:
    folder = root / rel / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\n" + FM.format(name=name) + extra + "---\n" + body)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project keeping skills where clients look for them, plus places that hold none."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(tmp_path / "registry"))
    write(tmp_path / "proj", ".claude/skills", "claude-one")
    write(tmp_path / "proj", ".github/skills", "copilot-one")
    write(tmp_path / "proj", "skills/.curated", "curated-one")
    write(tmp_path / "proj", "skills/drafts", "draft-one")
    write(tmp_path / "proj", "node_modules/pkg", "vendored")
    (tmp_path / "proj" / ".git" / "objects").mkdir(parents=True)
    return tmp_path


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


FOUND = ["proj/.claude/skills/claude-one", "proj/.github/skills/copilot-one", "proj/skills/.curated/curated-one"]


def test_validate_pack_and_publish_find_the_same_skills(project: Path) -> None:
    reports = json.loads(invoke("validate", "--format", "json", "--exclude", "drafts", "proj").stdout)
    assert [r["path"] for r in reports] == FOUND
    packed = json.loads(invoke("pack", "proj", "--exclude", "drafts", "-o", "dist", "--format", "json").stdout)
    assert sorted(p["name"] for p in packed) == ["claude-one", "copilot-one", "curated-one"]
    published = json.loads(invoke("publish", "proj", "--exclude", "drafts", "--format", "json").stdout)
    assert sorted(p["name"] for p in published) == ["claude-one", "copilot-one", "curated-one"]
    # without --exclude the drafts come too
    assert len(json.loads(invoke("pack", "proj", "-o", "dist2", "--format", "json").stdout)) == 4


def test_pack_reports_a_search_that_stopped_and_still_packs_what_it_found(project: Path) -> None:
    deep = project / "proj" / "a" / "b" / "c" / "d" / "e" / "f"
    write(deep, "g", "too-deep")
    result = invoke("pack", "proj", "--exclude", "drafts", "-o", "dist", "--format", "json")
    assert result.exit_code == 0
    assert len(json.loads(result.stdout)) == 3
    assert "proj:0:0: SK302 note did not search below 6 folder levels" in result.stderr


def test_validate_summary_counts_notes_apart(project: Path) -> None:
    write(project / "proj" / "a" / "b" / "c" / "d" / "e" / "f", "g", "too-deep")
    result = invoke("validate", "--strict", "--exclude", "drafts", "proj")
    assert result.exit_code == 0  # a note never fails, not even --strict
    assert result.stdout.splitlines()[-1] == "ok: 3 checked, 3 valid, 0 invalid; 0 errors, 0 warnings, 1 note"


def test_github_annotations(project: Path) -> None:
    write(project / "proj", "skills", "Bad-Name")
    write(project / "proj", "skills", "warned", body="\nRun `scripts/go.sh`, then stop.\n")
    result = invoke("validate", "--format", "github", "--exclude", "drafts", "--exclude", ".*", "proj")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "::error file=proj/skills/Bad-Name/SKILL.md,line=2,col=7,title=SK104::name 'Bad-Name' has characters other than "
        "lowercase ASCII letters, digits and '-': 'BN'; try 'bad-name'",
        "::warning file=proj/skills/warned/SKILL.md,line=8,col=6,title=SK211::referenced file 'scripts/go.sh' does not "
        "exist in the skill; add the file or fix the path",
        "FAILED: 2 checked, 1 valid, 1 invalid; 1 error, 1 warning",
    ]


def test_github_annotations_escape_what_would_break_them(project: Path) -> None:
    from skillctl.cli.validate import github_annotation
    from skillctl.skill.diagnostics import Diagnostic

    d = Diagnostic("SK161", "unknown field 'a,b': 100% wrong", "dir:x,y/SKILL.md", 4, 1)
    assert github_annotation(d) == "::error file=dir%3Ax%2Cy/SKILL.md,line=4,col=1,title=SK161::unknown field 'a,b': 100%25 wrong"
    whole_file = Diagnostic("SK222", "not executable", "demo/scripts/x.sh")
    assert github_annotation(whole_file) == "::warning file=demo/scripts/x.sh,title=SK222::not executable"
    note = Diagnostic("SK301", "read as 1.0.0", "demo/SKILL.md", 5, 12)
    assert github_annotation(note).startswith("::notice file=demo/SKILL.md,line=5,col=12,title=SK301::")


def test_changed_files_check_the_skills_that_hold_them(project: Path) -> None:
    (project / "proj" / ".claude" / "skills" / "claude-one" / "scripts").mkdir()
    script = project / "proj" / ".claude" / "skills" / "claude-one" / "scripts" / "x.py"
    script.write_text("print()\n")
    (project / "proj" / "README.md").write_text("# proj\n")
    files = [
        "proj/.claude/skills/claude-one/scripts/x.py",
        "proj/.claude/skills/claude-one/SKILL.md",  # the same skill: checked once
        "proj/skills/drafts/draft-one/SKILL.md",
        "proj/README.md",  # in no skill
        "proj/node_modules/pkg/vendored/SKILL.md",  # never searched
    ]
    reports = json.loads(invoke("validate", "--changed", "--format", "json", *files).stdout)
    assert [r["path"] for r in reports] == ["proj/.claude/skills/claude-one", "proj/skills/drafts/draft-one"]
    none = invoke("validate", "--changed", "proj/README.md")
    assert (none.exit_code, none.stdout) == (0, "ok: 0 checked (no changed file is part of a skill)\n")
