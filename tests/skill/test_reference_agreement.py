"""skillctl and the reference validator (PyPI ``skills-ref``) agree on every rule the spec states.

The corpus below is the spec's front-matter rules, each as a valid and an invalid example; both
validators must return the expected verdict. Where skillctl deliberately differs, a
``test_deliberate_difference_*`` test pins down both sides; each is explained in docs/authoring.md
section "Differences from skills-ref".

skills-ref is a test dependency (``pip install 'skills-ref==0.1.1'``): 0.1.1 is the newest release,
and the difference tests assert its behaviour, so a new release that changes it shows up here.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

try:
    from skills_ref.validator import validate as reference_validate
except ImportError as exc:  # pragma: no cover - a missing test dependency, said plainly
    raise ImportError("these tests compare against the reference validator: pip install 'skills-ref==0.1.1'") from exc

from .helpers import BODY, DESCRIPTION, check, codes, make_skill, only

SPEC_CORPUS: list[tuple[str, str, str, bool]] = [
    # (id, folder, front matter, valid per the spec)
    ("minimal", "demo", f"name: demo\ndescription: {DESCRIPTION}\n", True),
    (
        "all-fields",
        "pdf-tools",
        "name: pdf-tools\ndescription: Fill and merge PDF forms.\nlicense: Apache-2.0\n"
        "compatibility: Needs python3 and qpdf.\nmetadata:\n  version: \"1.2.0\"\n  author: team\n"
        "allowed-tools: Bash Read\n",
        True,
    ),
    ("digits-and-hyphens", "a1-b2-c3", "name: a1-b2-c3\ndescription: d\n", True),
    ("missing-name", "demo", "description: d\n", False),
    ("missing-description", "demo", "name: demo\n", False),
    ("empty-name", "demo", 'name: ""\ndescription: d\n', False),
    ("empty-description", "demo", 'name: demo\ndescription: ""\n', False),
    ("blank-description", "demo", 'name: demo\ndescription: "   "\n', False),
    ("name-64", "n" * 64, f"name: {'n' * 64}\ndescription: d\n", True),
    ("name-65", "n" * 65, f"name: {'n' * 65}\ndescription: d\n", False),
    ("name-uppercase", "Demo", "name: Demo\ndescription: d\n", False),
    ("name-leading-hyphen", "-demo", "name: -demo\ndescription: d\n", False),
    ("name-trailing-hyphen", "demo-", "name: demo-\ndescription: d\n", False),
    ("name-double-hyphen", "de--mo", "name: de--mo\ndescription: d\n", False),
    ("name-underscore", "de_mo", "name: de_mo\ndescription: d\n", False),
    ("name-dot", "de.mo", "name: de.mo\ndescription: d\n", False),
    ("name-space", "de mo", 'name: "de mo"\ndescription: d\n', False),
    ("name-not-folder", "other", "name: demo\ndescription: d\n", False),
    ("description-1024", "demo", f"name: demo\ndescription: {'d' * 1024}\n", True),
    ("description-1025", "demo", f"name: demo\ndescription: {'d' * 1025}\n", False),
    ("compatibility-500", "demo", f"name: demo\ndescription: d\ncompatibility: {'c' * 500}\n", True),
    ("compatibility-501", "demo", f"name: demo\ndescription: d\ncompatibility: {'c' * 501}\n", False),
    ("unknown-field", "demo", "name: demo\ndescription: d\nversion: 1.0.0\n", False),
    ("unknown-field-author", "demo", "name: demo\ndescription: d\nauthor: me\n", False),
    ("metadata-strings", "demo", "name: demo\ndescription: d\nmetadata:\n  a: b\n  c: d\n", True),
    ("quoted-number-name", "42", 'name: "42"\ndescription: d\n', True),
    ("front-matter-list", "demo", "- name: demo\n- description: d\n", False),
    ("invalid-yaml", "demo", "name: demo\ndescription: use: it\n", False),
    ("duplicate-key", "demo", "name: demo\ndescription: d\ndescription: e\n", False),
]


def _skillctl_valid(folder: str) -> bool:
    return only(check(folder)).valid()


def _reference_valid(folder: str) -> bool:
    return reference_validate(Path(folder)) == []


def test_reference_validator_is_the_expected_release() -> None:
    assert version("skills-ref") == "0.1.1"


@pytest.mark.parametrize(("case_id", "folder", "fm", "expected"), SPEC_CORPUS, ids=[c[0] for c in SPEC_CORPUS])
def test_agrees_with_reference_validator(in_tmp: Path, case_id: str, folder: str, fm: str, expected: bool) -> None:
    make_skill(in_tmp, front_matter_text=fm, folder=folder)
    assert _reference_valid(folder) is expected, reference_validate(Path(folder))
    assert _skillctl_valid(folder) is expected, [d.format() for d in only(check(folder)).diagnostics]


@pytest.mark.parametrize(
    ("case_id", "skill_md"),
    [
        ("no-front-matter", "# Demo\n\nJust Markdown.\n"),
        ("unclosed-front-matter", "---\nname: demo\ndescription: d\n\n# Demo\n"),
    ],
)
def test_agrees_on_broken_files(in_tmp: Path, case_id: str, skill_md: str) -> None:
    make_skill(in_tmp, skill_md=skill_md.encode())
    assert not _reference_valid("demo")
    assert not _skillctl_valid("demo")


def test_agrees_on_missing_skill_md(in_tmp: Path) -> None:
    (in_tmp / "demo").mkdir()
    assert not _reference_valid("demo")
    # skillctl validate finds no skill there; check_skill (used by pack) says SKILL.md is missing
    assert not _skillctl_valid("demo")


def test_reference_cli_agrees_with_its_library(in_tmp: Path) -> None:
    """The corpus calls skills-ref in-process; its CLI (`agentskills validate`) gives the same."""
    make_skill(in_tmp, folder="good", name="good")
    make_skill(in_tmp, folder="bad", front_matter_text="name: Bad\ndescription: d\n")
    cmd = [sys.executable, "-c", "from skills_ref.cli import main; main()", "validate"]
    assert subprocess.run(cmd + ["good"], capture_output=True).returncode == 0
    assert subprocess.run(cmd + ["bad"], capture_output=True).returncode == 1


# --------------------------------------------------------------------- deliberate differences
# Each of these is documented in docs/authoring.md, section "Differences from skills-ref".


@pytest.mark.parametrize("name", ["café", "ｐｄｆ", "данные", "日本語"])
def test_deliberate_difference_unicode_names(in_tmp: Path, name: str) -> None:
    # The spec says lowercase ASCII letters, digits and hyphens. skills-ref NFKC-normalises and
    # accepts any str.isalnum() character, so a name other tools cannot put in a URL, an OCI
    # repository or a shell-safe path passes there.
    make_skill(in_tmp, name=name)
    assert _reference_valid(name)
    assert codes(only(check(name))) == ["SK104"]


@pytest.mark.parametrize(
    ("fm", "code"),
    [
        ("name: demo\ndescription: d\nmetadata:\n  version: 1.0\n", "SK132"),  # float 1.0
        ("name: demo\ndescription: yes\n", "SK112"),  # YAML 1.1 boolean
        ("name: demo\ndescription: d\nlicense: 2\n", "SK151"),
    ],
    ids=["metadata-float", "description-bool", "license-int"],
)
def test_deliberate_difference_typed_yaml_values(in_tmp: Path, fm: str, code: str) -> None:
    # skills-ref parses with strictyaml, where every scalar is a string. skillctl keeps YAML's
    # types (PyYAML, as every python-frontmatter tool reads the file) and so reports `1.0`
    # (a float: version 1.0 and 1.00 are equal) and `yes` (True) instead of silently changing them.
    make_skill(in_tmp, front_matter_text=fm)
    assert _reference_valid("demo")
    assert codes(only(check("demo"))) == [code]


def test_deliberate_difference_unquoted_number_name(in_tmp: Path) -> None:
    make_skill(in_tmp, folder="42", front_matter_text="name: 42\ndescription: d\n")
    assert _reference_valid("42")
    assert codes(only(check("42"))) == ["SK102"]


def test_deliberate_difference_allowed_tools_list(in_tmp: Path) -> None:
    # The spec: allowed-tools is a space-separated string. skills-ref does not check it.
    make_skill(in_tmp, front_matter_text="name: demo\ndescription: d\nallowed-tools:\n  - Bash\n  - Read\n")
    assert _reference_valid("demo")
    assert codes(only(check("demo"))) == ["SK141"]


def test_deliberate_difference_lowercase_skill_md(in_tmp: Path) -> None:
    # The spec names the file SKILL.md; skills-ref falls back to skill.md. On a case-sensitive
    # filesystem the fallback makes a skill that other loaders cannot find.
    folder = make_skill(in_tmp)
    (folder / "SKILL.md").rename(folder / "skill.md")
    assert _reference_valid("demo")
    assert codes(only(check("demo"))) == ["SK002"]


@pytest.mark.parametrize(
    ("fm", "code"),
    [
        ("name: demo\ndescription: d\nmetadata: just text\n", "SK131"),
        ("name: demo\ndescription: d\nmetadata:\n  nested:\n    a: b\n", "SK132"),
    ],
    ids=["metadata-text", "metadata-nested"],
)
def test_deliberate_difference_metadata_must_map_strings_to_strings(in_tmp: Path, fm: str, code: str) -> None:
    # The spec: metadata is a map of string to string. skills-ref stringifies nested values
    # and does not check metadata that is not a map.
    make_skill(in_tmp, front_matter_text=fm)
    assert _reference_valid("demo")
    assert codes(only(check("demo"))) == [code]


def test_deliberate_difference_empty_compatibility(in_tmp: Path) -> None:
    # The spec: compatibility, when present, is 1-500 characters. skills-ref accepts "".
    make_skill(in_tmp, front_matter_text='name: demo\ndescription: d\ncompatibility: ""\n')
    assert _reference_valid("demo")
    assert codes(only(check("demo"))) == ["SK121"]


def test_deliberate_difference_name_is_not_stripped(in_tmp: Path) -> None:
    # skills-ref strips the name before checking it; skillctl checks what is written, because a
    # loader that does not strip sees a different name than the folder.
    make_skill(in_tmp, front_matter_text=f'name: " demo"\ndescription: {DESCRIPTION}\n')
    assert _reference_valid("demo")
    assert codes(only(check("demo"))) == ["SK104", "SK107"]


def test_deliberate_difference_flow_style_yaml(in_tmp: Path) -> None:
    # Flow mappings are ordinary YAML; strictyaml (and so skills-ref) refuses them.
    make_skill(in_tmp, front_matter_text=f'name: demo\ndescription: {DESCRIPTION}\nmetadata: {{version: "1.0.0"}}\n')
    assert not _reference_valid("demo")
    report = only(check("demo"))
    assert report.valid(strict=True), [d.format() for d in report.diagnostics]


def test_deliberate_difference_body_and_files_are_checked(in_tmp: Path) -> None:
    # skills-ref checks only the front matter; skillctl also warns about the body and files.
    make_skill(in_tmp, body=BODY + "\nRun `scripts/missing.sh`.\n")
    assert _reference_valid("demo")
    report = only(check("demo"))
    assert report.valid() and not report.valid(strict=True)
    assert codes(report) == ["SK211"]
