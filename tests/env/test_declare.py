"""Where requirements come from: PEP 723 blocks, requirements.txt, skills.yaml — and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.env.declare import (
    PROJECT,
    Declarations,
    parse_requirements_txt,
    project_declarations,
    read_script_metadata,
    skill_declarations,
)
from skillctl.env.imports import folder_reader
from skillctl.errors import EnvError, LockError
from skillctl.registry.lockfile import load_requirements

from .conftest import real_skill


def declarations_of_folder(folder: Path) -> Declarations:
    paths = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    return skill_declarations(folder.name, paths, folder_reader(folder))


def test_getsentry_pep723_block_declares_pyyaml_and_python_312():
    decl = declarations_of_folder(real_skill("getsentry+skills", "skill-writer"))
    assert [(d.requirement, d.owner, d.source) for d in decl.python] == [
        ("pyyaml", "skill-writer", "scripts/quick_validate.py (PEP 723)")
    ]
    assert [d.requirement for d in decl.requires_python] == [">=3.12"]


def test_awesome_copilot_requirements_txt_declares_markitdown_with_extras():
    decl = declarations_of_folder(real_skill("github+awesome-copilot", "convert-pdf-to-md"))
    assert [(d.requirement, d.source) for d in decl.python] == [
        ("markitdown[pdf]>=0.1.0", "scripts/requirements.txt:1"),
        ("pymupdf>=1.24.0", "scripts/requirements.txt:2"),
    ]


def test_pep723_blocks_come_before_requirements_txt(tmp_path):
    skill = tmp_path / "both"
    (skill / "scripts").mkdir(parents=True)
    (skill / "requirements.txt").write_text("six\n")
    (skill / "scripts" / "a.py").write_text('# /// script\n# dependencies = ["numpy>=1.26"]\n# ///\nimport numpy\n')
    decl = declarations_of_folder(skill)
    assert [d.requirement for d in decl.python] == ["numpy>=1.26", "six"]


def test_reference_regex_ignores_other_block_types_and_unclosed_blocks():
    text = "# /// pyproject\n# x = 1\n# ///\n# /// script\n# dependencies = ['a']\n"
    assert read_script_metadata(text, "s.py") is None


def test_two_script_blocks_are_refused():
    block = "# /// script\n# dependencies = []\n# ///\n"
    with pytest.raises(EnvError, match="more than one"):
        read_script_metadata(block + "import os\n" + block, "s.py")


def test_invalid_toml_in_a_block_is_refused_naming_the_script():
    with pytest.raises(EnvError, match="x.py.*not valid TOML"):
        read_script_metadata("# /// script\n# dependencies = [\n# ///\n", "skill: x.py")


@pytest.mark.parametrize(
    "line, words",
    [
        ("-r other.txt", "'-r' is not allowed"),
        ("-c constraints.txt", "'-c' is not allowed"),
        ("-e .", "'-e' is not allowed"),
        ("--index-url https://example.org/simple", "'--index-url' is not allowed"),
        ("https://example.org/pkg-1.0.tar.gz", "URL or a local path"),
        ("./vendor/pkg", "URL or a local path"),
        ("/abs/pkg-1.0-py3-none-any.whl", "URL or a local path"),
        ("pkg @ https://example.org/pkg.whl", "URL or a local path"),
        ("not a requirement!", "not a valid requirement"),
    ],
)
def test_requirements_txt_refuses_what_leaves_the_index(line, words):
    with pytest.raises(EnvError, match=words) as err:
        parse_requirements_txt("s", "scripts/requirements.txt", f"numpy\n{line}\n")
    assert "scripts/requirements.txt:2" in str(err.value)


def test_requirements_txt_comments_continuations_and_markers():
    text = "# tools\nnumpy>=1.26  # arrays\npandas \\\n  >=2\npywin32; sys_platform == 'win32'\n\n"
    found = parse_requirements_txt("s", "requirements.txt", text)
    assert [(d.requirement, d.source) for d in found] == [
        ("numpy>=1.26", "requirements.txt:2"),
        ("pandas>=2", "requirements.txt:3"),
        ('pywin32; sys_platform == "win32"', "requirements.txt:5"),
    ]


def test_project_environment_is_read_from_skills_yaml(tmp_path):
    path = tmp_path / "skills.yaml"
    path.write_text("skills:\n  tally: ^1\nenvironment:\n  python: ['numpy>=1.26', pandas]\n  debian: [jq]\n")
    req = load_requirements(path)
    decl = project_declarations(req.environment)
    assert [(d.requirement, d.owner) for d in decl.python] == [("numpy>=1.26", PROJECT), ("pandas", PROJECT)]
    assert [d.requirement for d in decl.debian] == ["jq"]
    assert req.to_dict()["environment"] == {"python": ["numpy>=1.26", "pandas"], "debian": ["jq"]}


@pytest.mark.parametrize(
    "body, words",
    [
        ("environment: [numpy]", "must be a mapping"),
        ("environment:\n  pip: [numpy]", "unknown key"),
        ("environment:\n  python: numpy", "must be a list of strings"),
        ("environment:\n  python: ['numpy @ https://x/y.whl']", "names a URL"),
        ("environment:\n  debian: ['Bad Name']", "not a Debian package name"),
    ],
)
def test_bad_project_environment_is_a_lock_error(tmp_path, body, words):
    path = tmp_path / "skills.yaml"
    path.write_text(f"skills: {{}}\n{body}\n")
    with pytest.raises(LockError, match=words):
        load_requirements(path)


def test_a_skills_yaml_without_environment_keeps_its_old_requirements_shape(tmp_path):
    path = tmp_path / "skills.yaml"
    path.write_text("skills:\n  tally: ^1\n")
    assert "environment" not in load_requirements(path).to_dict()
