"""``validate --fix`` / ``--diff``: mechanical repairs, verified, idempotent, and nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillctl.skill.fix import plan_fixes, write_fix

from .helpers import BODY, check, codes, make_skill, only


def fixed(root: Path, fm: str, profile: str = "spec", *, raw: bytes | None = None) -> str | None:
    folder = make_skill(root, front_matter_text=fm, skill_md=raw)
    plan = plan_fixes(folder, profile)
    if plan is None:
        return None
    write_fix(plan)
    assert plan_fixes(folder, profile) is None, "a second run must find nothing to repair"
    return (folder / "SKILL.md").read_text("utf-8")


def fm_of(text: str) -> str:
    return text.split("---\n")[1]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("metadata:\n  build: 7\n", 'metadata:\n  version: "0.1.0"\n  build: "7"\n'),
        ("metadata:\n  version: 1.10\n", 'metadata:\n  version: "1.10"\n'),  # as written, not the float 1.1
        ('metadata:\n  version: "1.0.0"\n  beta: true   # keep me\n', 'metadata:\n  version: "1.0.0"\n  beta: "true"   # keep me\n'),
        ('metadata:\n  version: "1.0.0"\nallowed-tools:\n  - Read\n  - Grep\n', 'metadata:\n  version: "1.0.0"\nallowed-tools: Read Grep\n'),
        ('metadata:\n  version: "1.0.0"\nallowed-tools: [Read, Grep]\n', 'metadata:\n  version: "1.0.0"\nallowed-tools: Read Grep\n'),
        ("version: 1.2.0\n", 'metadata:\n  version: "1.2.0"\n'),  # moved where the spec keeps it
        ("version: 1.2.0\nmetadata:\n  author: me\n", 'metadata:\n  version: "1.2.0"\n  author: me\n'),
        ("", 'metadata:\n  version: "0.1.0"\n'),  # added, as `skillctl init` starts
        ("metadata:\n", 'metadata:\n  version: "0.1.0"\n'),
        ('metadata: {version: "1.0.0", build: 7}\n', 'metadata: {version: "1.0.0", build: "7"}\n'),  # one scalar, in place
    ],
)
def test_repairs(in_tmp: Path, before: str, after: str) -> None:
    text = fixed(in_tmp, f"name: demo\ndescription: d\n{before}")
    assert text is not None and fm_of(text) == f"name: demo\ndescription: d\n{after}"
    assert text.endswith(BODY)
    report = only(check("demo"))
    assert report.valid(strict=True), [d.format() for d in report.diagnostics]  # a note (1.10 is MAJOR.MINOR) may remain


@pytest.mark.parametrize(
    "fm",
    [
        'metadata: {build: "7"}\n',  # flow metadata: not sure where a version would go
        'metadata:\n  version: "1.0.0"\nallowed-tools:\n  - Read\n  - Bash(git add:*)\n',  # cannot be space-separated
        'metadata:\n  version: "1.0.0"\nallowed-tools:\n  - Read  # why\n  - Grep\n',  # a comment would be lost
        'metadata:\n  version: "1.0.0"\n  tags: [a, b]\n',  # a list under metadata: what string?
        'metadata:\n  version: "1.0.0"\n  build:\n',  # empty: not sure what was meant
        'metadata:\n  version: "1.0.0"\n',  # nothing wrong
    ],
)
def test_what_it_is_not_sure_of_is_left_alone(in_tmp: Path, fm: str) -> None:
    assert fixed(in_tmp, f"name: demo\ndescription: d\n{fm}") is None


def test_a_file_that_does_not_parse_is_left_alone(in_tmp: Path) -> None:
    assert fixed(in_tmp, "name: demo\ndescription: use: it\nmetadata:\n  build: 7\n") is None


def test_byte_order_mark_and_crlf(in_tmp: Path) -> None:
    raw = ("\ufeff---\r\nname: demo\r\ndescription: d\r\nmetadata:\r\n  version: \"1.0.0\"\r\n---\r\n\r\n# Demo\r\n").encode()
    folder = make_skill(in_tmp, skill_md=raw)
    plan = plan_fixes(folder)
    assert plan is not None and plan.changes == ("removed the byte-order mark", "CRLF line ends → LF")
    assert "# removed the byte-order mark; CRLF line ends → LF" in plan.diff("demo/SKILL.md")
    write_fix(plan)
    assert (folder / "SKILL.md").read_bytes() == b'---\nname: demo\ndescription: d\nmetadata:\n  version: "1.0.0"\n---\n\n# Demo\n'
    assert codes(only(check("demo"))) == []


def test_lone_carriage_returns_are_left_alone(in_tmp: Path) -> None:
    assert fixed(in_tmp, "", raw=b'---\rname: demo\rdescription: d\r---\r\r# Demo\r') is None


def test_profiles_decide_what_is_a_repair(in_tmp: Path) -> None:
    # OpenClaw reads a top-level version: it is not moved under that profile
    assert fixed(in_tmp, "name: demo\ndescription: d\nversion: 1.0.0\n", "openclaw") is None
    # Claude Code documents argument-hint as text: the bracket list is quoted under its profile
    text = fixed(in_tmp, 'name: demo\ndescription: d\nargument-hint: [file]\nmetadata:\n  version: "1.0.0"\n', "claude-code")
    assert text is not None and 'argument-hint: "[file]"\n' in text
    # and it keeps an allowed-tools list, which Claude Code reads
    assert fixed(in_tmp, 'name: demo\ndescription: d\nallowed-tools: [Read]\nmetadata:\n  version: "1.0.0"\n', "claude-code") is None


def test_the_file_keeps_its_mode(in_tmp: Path) -> None:
    folder = make_skill(in_tmp, front_matter_text="name: demo\ndescription: d\n")
    os.chmod(folder / "SKILL.md", 0o640)
    write_fix(plan_fixes(folder))
    assert (folder / "SKILL.md").stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(folder)) == ["SKILL.md"]  # no temporary file left behind


# ------------------------------------------------------------------ the command


def test_diff_shows_without_writing(in_tmp: Path, invoke) -> None:
    folder = make_skill(in_tmp, front_matter_text="name: demo\ndescription: d\nmetadata:\n  build: 7\n")
    before = (folder / "SKILL.md").read_bytes()
    result = invoke("validate", "--diff", "demo")
    assert result.exit_code == 1  # still invalid: nothing was written
    assert (folder / "SKILL.md").read_bytes() == before
    assert "--- a/demo/SKILL.md\n+++ b/demo/SKILL.md\n" in result.output
    assert '-  build: 7\n' in result.output and '+  build: "7"\n' in result.output


def test_fix_writes_then_validates(in_tmp: Path, invoke) -> None:
    make_skill(in_tmp / "skills", front_matter_text="name: demo\ndescription: d\nmetadata:\n  build: 7\n")
    make_skill(in_tmp / "skills", name="clean", front_matter_text='name: clean\ndescription: d\nmetadata:\n  version: "1.0.0"\n')
    result = invoke("validate", "--fix", "skills")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        'fixed skills/demo/SKILL.md: quoted metadata.build (7 → "7"); added metadata.version "0.1.0"',
        "ok: 2 checked, 2 valid, 0 invalid; 0 errors, 0 warnings",
    ]
    again = invoke("validate", "--fix", "skills")
    assert again.output == "ok: 2 checked, 2 valid, 0 invalid; 0 errors, 0 warnings\n"


def test_fix_in_json(in_tmp: Path, invoke) -> None:
    make_skill(in_tmp, front_matter_text="name: demo\ndescription: d\n")
    reports = json.loads(invoke("validate", "--fix", "--diff", "--format", "json", "demo").stdout)
    assert [(r["path"], r["valid"], r["fixed"], r["fixes"]) for r in reports] == [("demo", True, True, ['added metadata.version "0.1.0"'])]
    assert '+metadata:\n+  version: "0.1.0"\n' in reports[0]["diff"]
