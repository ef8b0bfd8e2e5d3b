"""Where requirements come from: PEP 723 blocks, requirements.txt, skills.yaml — and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from skillctl.env import declare
from skillctl.env.declare import (
    PROJECT,
    Declarations,
    ignored_requires_python,
    parse_requirements_txt,
    project_declarations,
    read_script_metadata,
    skill_declarations,
)
from skillctl.env.imports import _canonical, folder_reader
from skillctl.errors import EnvError, LockError
from skillctl.project.spec import load_project

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
    req = load_project(path)
    decl = project_declarations(req.environment)
    assert [(d.requirement, d.owner) for d in decl.python] == [("numpy>=1.26", PROJECT), ("pandas", PROJECT)]
    assert [d.requirement for d in decl.debian] == ["jq"]
    assert req.requirements_doc()["environment"] == {"python": ["numpy>=1.26", "pandas"], "debian": ["jq"]}


@pytest.mark.parametrize(
    "body, words",
    [
        ("environment: [numpy]", "must be a mapping"),
        ("environment:\n  pip: [numpy]", "unknown key"),
        ("environment:\n  python: numpy", "must be a list of strings"),
        ("environment:\n  python: ['numpy @ https://x/y.whl']", "names a URL"),
        ("environment:\n  debian: ['Bad Name']", "not a Debian package name"),
        ("environment:\n  ignore-requires-python: skill-writer", "ignore-requires-python must be a list of skill names"),
        ("environment:\n  ignore-requires-python: ['Skill Writer']", "'Skill Writer' is not a skill name"),
    ],
)
def test_bad_project_environment_is_a_lock_error(tmp_path, body, words):
    path = tmp_path / "skills.yaml"
    path.write_text(f"skills: {{}}\n{body}\n")
    with pytest.raises(LockError, match=words):
        load_project(path)


def test_skills_whose_requires_python_is_ignored_are_read_from_skills_yaml(tmp_path):
    path = tmp_path / "skills.yaml"
    path.write_text("skills:\n  skill-writer: ^1\nenvironment:\n  ignore-requires-python: [skill-writer, skill-writer]\n")
    environment = load_project(path).environment
    assert ignored_requires_python(environment) == ("skill-writer",) and project_declarations(environment).empty
    assert ignored_requires_python(None) == ()


def test_a_skills_yaml_without_environment_keeps_its_old_requirements_shape(tmp_path):
    path = tmp_path / "skills.yaml"
    path.write_text("skills:\n  tally: ^1\n")
    assert "environment" not in load_project(path).requirements_doc()


# The validator learns the names of plainly written requirements without packaging: whatever the
# plain forms match, packaging must accept, with the same name — checked here against packaging.

_names = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,8}[A-Za-z0-9])?", fullmatch=True)
_blank = st.sampled_from(["", " ", "\t", "  "])
_bounds = st.lists(
    st.tuples(st.sampled_from(["==", "!=", "<=", ">=", "<", ">", "~=", "===", "=", "=>"]), _blank,
              st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,3}(\.\*|a1|\.post1|-dev)?", fullmatch=True)),
    max_size=3,
)


@settings(max_examples=400, deadline=None, database=None)
@given(_blank, _names, st.lists(_names, max_size=3), _blank, _bounds, _blank)
def test_a_plain_requirement_is_one_packaging_accepts_with_the_same_name(lead, name, extras, gap, bounds, trail):
    text = lead + name + (f"[{','.join(extras)}]" if extras else "") + gap + ", ".join(op + b + v for op, b, v in bounds) + trail
    plain = declare.PLAIN_REQUIREMENT_RE.fullmatch(text)
    try:
        expected: str | Exception = declare.parse_requirement(text, "here").name
    except EnvError as exc:
        expected = exc
    if plain is not None:
        assert expected == plain.group(1), text
    if isinstance(expected, Exception):
        with pytest.raises(EnvError) as refused:
            declare.requirement_name(text, "here")
        assert str(refused.value) == str(expected)
    else:
        assert declare.requirement_name(text, "here") == expected == Requirement(text).name


@settings(max_examples=300, deadline=None, database=None)
@given(_blank, _bounds, _blank)
def test_plain_python_bounds_are_ones_packaging_accepts(lead, bounds, trail):
    text = lead + ",".join(op + b + v for op, b, v in bounds) + trail
    if declare._PLAIN_PYTHON_RE.fullmatch(text):
        SpecifierSet(text)


@pytest.mark.parametrize(
    "text", ["markitdown[pdf]>=0.1.0", "numpy>=1.26,<2", "PyYAML", "a-b.c_d ~= 1.4", "x[a, b] == 1.0 , != 1.0.3", "Django<5"]
)
def test_how_skills_write_requirements_is_plain(text):
    assert declare.PLAIN_REQUIREMENT_RE.fullmatch(text)
    assert declare.requirement_name(text, "here") == Requirement(text).name


@pytest.mark.parametrize("name", ["Django", "oslo.concurrency", "A__b--c..D", "python-docx", "ruamel.yaml", "x"])
def test_names_are_normalised_as_packaging_does(name):
    assert _canonical(name) == canonicalize_name(name)
