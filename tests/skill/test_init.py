"""``skillctl init``: a new skill that passes ``validate --strict``; refusals are one line, exit 1."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillctl.errors import SkillError
from skillctl.skill.scaffold import scaffold
from skillctl.skill.validate import check_skill

from .helpers import assert_clean_output, run_cli_as_nobody


def test_init_creates_a_skill_that_passes_strict(in_tmp: Path, invoke) -> None:
    result = invoke("init", "pdf-forms", "-o", "skills")
    assert result.exit_code == 0, result.output
    assert "created skills/pdf-forms/" in result.output
    folder = in_tmp / "skills" / "pdf-forms"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "SKILL.md", "references", "references/notes.md", "scripts", "scripts/run.sh",
    ]
    assert os.access(folder / "scripts" / "run.sh", os.X_OK)
    check = invoke("validate", "--strict", "skills/pdf-forms")
    assert check.exit_code == 0, check.output
    skill = check_skill(folder).skill
    assert skill is not None and (skill.name, skill.version) == ("pdf-forms", "0.1.0")


def test_init_json_output(in_tmp: Path, invoke) -> None:
    result = invoke("init", "demo", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"name": "demo", "path": "demo"}


@pytest.mark.parametrize(
    "description",
    ['Answer "quoted" questions: with colons, # hashes and \\ backslashes', "tab\there and a bell \x07", "Données – 数据"],
)
def test_init_description_is_written_as_given(in_tmp: Path, invoke, description: str) -> None:
    result = invoke("init", "demo", "--description", description)
    assert result.exit_code == 0, result.output
    skill = check_skill(in_tmp / "demo").skill
    assert skill is not None and skill.description == description


@pytest.mark.parametrize(
    ("name", "reason"),
    [("Demo", "lowercase"), ("demo_x", "lowercase"), ("-demo", "start or end"), ("de--mo", "'--'"), ("a" * 65, "limit is 64"), ("café", "lowercase")],
)
def test_init_refuses_an_invalid_name(in_tmp: Path, invoke, name: str, reason: str) -> None:
    result = invoke("init", "--", name)
    assert result.exit_code == 1
    assert result.output.startswith("Error: invalid skill name") and result.output.count("\n") == 1, result.output
    assert reason in result.output
    assert list(in_tmp.iterdir()) == []


def test_init_refuses_an_existing_folder(in_tmp: Path, invoke) -> None:
    (in_tmp / "demo").mkdir()
    (in_tmp / "demo" / "keep.txt").write_text("mine\n")
    result = invoke("init", "demo")
    assert result.exit_code == 1
    assert result.output == "Error: demo already exists; choose another name or remove it first\n"
    assert [p.name for p in (in_tmp / "demo").iterdir()] == ["keep.txt"]


def test_init_refuses_a_multi_line_description(in_tmp: Path, invoke) -> None:
    result = invoke("init", "demo", "-d", "one\ntwo")
    assert result.exit_code == 1 and "single line" in result.output
    assert not (in_tmp / "demo").exists()


def test_init_into_a_file_is_a_usage_error(in_tmp: Path, invoke) -> None:
    (in_tmp / "afile").write_text("x")
    result = invoke("init", "demo", "--output", "afile")
    assert result.exit_code == 2 and "afile" in result.output
    assert_clean_output(result.output)


def test_init_into_a_read_only_folder(shared_tmp: Path) -> None:
    (shared_tmp / "locked").mkdir(mode=0o555)
    for target in ("locked", "locked/sub"):
        result = run_cli_as_nobody(["init", "demo", "-o", target], shared_tmp)
        assert result["exception"] is None, result
        assert result["exit_code"] == 1
        assert result["output"] == f"Error: cannot create {target}/demo: Permission denied; choose a folder you can write to (-o/--output)\n"
    assert list((shared_tmp / "locked").iterdir()) == []


def test_scaffold_library_errors_are_skill_errors(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="must not be empty"):
        scaffold("", tmp_path)
    with pytest.raises(SkillError, match="invalid skill name"):
        scaffold("Bad", tmp_path)
