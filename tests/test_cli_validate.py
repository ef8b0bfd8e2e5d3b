"""``skillctl validate`` / ``lint`` through click's CliRunner: output formats, exit codes, options.

Exit status: 0 all valid, 1 something invalid (or warnings with --strict), 2 usage error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillctl.cli import cli

# Every diagnostic line is path:line:col (0:0 for a whole-file finding, as in the JSON).
LINE_RE = re.compile(r"^(?P<path>[^:\n]+?):(?P<line>0|[1-9]\d*):(?P<col>0|[1-9]\d*): (?P<code>SK\d{3}) (?P<severity>error|warning) (?P<message>\S.*)$")
SUMMARY_RE = re.compile(
    r"^(?P<status>ok|FAILED): (?P<checked>\d+) checked, (?P<valid>\d+) valid, (?P<invalid>\d+) invalid; "
    r"(?P<errors>\d+) errors?, (?P<warnings>\d+) warnings?(?P<strict> \(--strict: warnings fail\))?$"
)
DIAGNOSTIC_KEYS = ["code", "severity", "file", "line", "column", "message"]
VERSIONED = 'metadata:\n  version: "1.0.0"\n'


def write_skill(root: Path, folder: str, front_matter: str, body: str = "\n# Demo\n\nDo the thing.\n") -> Path:
    skill = root / folder
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\n" + front_matter + "---\n" + body)
    return skill


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """skills/good (clean), skills/warn (one warning), skills/bad (two errors). The first two declare
    a version, so they get no SK303 note (publish would take them as they are)."""
    monkeypatch.chdir(tmp_path)
    write_skill(tmp_path, "skills/good", f"name: good\ndescription: A clean skill.\n{VERSIONED}")
    write_skill(tmp_path, "skills/warn", f"name: warn\ndescription: Refers to a missing script.\n{VERSIONED}", "\nRun `scripts/go.sh`.\n")
    write_skill(tmp_path, "skills/bad", "name: Bad\ndescription: Wrong name.\nversion: 1.0.0\n")
    return tmp_path


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


def test_text_lines_and_summary(tree: Path) -> None:
    result = invoke("validate", "skills")
    assert result.exit_code == 1
    *lines, summary = result.stdout.strip().splitlines()
    parsed = [LINE_RE.match(line) for line in lines]
    assert all(parsed), lines
    assert [(m["path"], m["line"], m["col"], m["code"], m["severity"]) for m in parsed] == [
        ("skills/bad/SKILL.md", "2", "7", "SK104", "error"),
        ("skills/bad/SKILL.md", "2", "7", "SK107", "error"),
        ("skills/bad/SKILL.md", "4", "1", "SK161", "error"),  # at the key: the field is unknown
        ("skills/warn/SKILL.md", "8", "6", "SK211", "warning"),  # below the two lines of VERSIONED
    ]
    m = SUMMARY_RE.match(summary)
    assert m, summary
    assert m.groupdict() == {"status": "FAILED", "checked": "3", "valid": "2", "invalid": "1", "errors": "3", "warnings": "1", "strict": None}


def test_whole_file_diagnostics_are_at_line_0(tree: Path) -> None:
    (tree / "skills" / "good" / "scripts").mkdir()
    (tree / "skills" / "good" / "scripts" / "go.sh").write_text("#!/bin/sh\n")  # not executable
    [line, _] = invoke("validate", "skills/good").stdout.strip().splitlines()
    m = LINE_RE.match(line)
    assert m and (m["path"], m["line"], m["col"], m["code"]) == ("skills/good/scripts/go.sh", "0", "0", "SK222")


def test_valid_skill_exits_0(tree: Path) -> None:
    result = invoke("validate", "skills/good")
    assert result.exit_code == 0
    assert result.stdout == "ok: 1 checked, 1 valid, 0 invalid; 0 errors, 0 warnings\n"


def test_warnings_pass_without_strict_and_fail_with_it(tree: Path) -> None:
    assert invoke("validate", "skills/warn").exit_code == 0
    strict = invoke("validate", "--strict", "skills/warn")
    assert strict.exit_code == 1
    assert SUMMARY_RE.match(strict.stdout.splitlines()[-1])["strict"]
    assert strict.stdout.splitlines()[-1].startswith("FAILED: 1 checked, 0 valid, 1 invalid")
    reports = json.loads(invoke("validate", "--strict", "--format", "json", "skills/warn").stdout)
    assert [r["valid"] for r in reports] == [False]
    assert [r["valid"] for r in json.loads(invoke("validate", "--format", "json", "skills/warn").stdout)] == [True]


def test_json_shape(tree: Path) -> None:
    result = invoke("validate", "--format", "json", "skills")
    assert result.exit_code == 1
    reports = json.loads(result.stdout)  # stdout is exactly one JSON document: no summary line
    assert [list(r) for r in reports] == [["path", "name", "valid", "diagnostics"]] * 3
    assert [(r["path"], r["name"], r["valid"]) for r in reports] == [
        ("skills/bad", "Bad", False),
        ("skills/good", "good", True),
        ("skills/warn", "warn", True),
    ]
    for r in reports:
        for d in r["diagnostics"]:
            assert list(d) == DIAGNOSTIC_KEYS
            assert isinstance(d["line"], int) and isinstance(d["column"], int)
    assert reports[0]["diagnostics"][0] == {
        "code": "SK104",
        "severity": "error",
        "file": "skills/bad/SKILL.md",
        "line": 2,
        "column": 7,
        "message": reports[0]["diagnostics"][0]["message"],
    }
    assert "Bad" in reports[0]["diagnostics"][0]["message"]


def test_json_for_a_path_that_is_not_a_skill(tree: Path) -> None:
    result = invoke("validate", "--format", "json", "missing")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == [
        {"path": "missing", "name": None, "valid": False, "diagnostics": [
            {"code": "SK012", "severity": "error", "file": "missing", "line": 0, "column": 0, "message": "no such file or folder"}
        ]}
    ]


def test_lint_is_an_alias(tree: Path) -> None:
    for args in (["skills"], ["--strict", "skills/warn"], ["--format", "json", "skills"]):
        v, l = invoke("validate", *args), invoke("lint", *args)
        assert (l.exit_code, l.stdout) == (v.exit_code, v.stdout)


def test_quiet_hides_warnings_but_not_errors_or_the_summary(tree: Path) -> None:
    result = invoke("validate", "-q", "skills")
    lines = result.stdout.strip().splitlines()
    assert [LINE_RE.match(line)["code"] for line in lines[:-1]] == ["SK104", "SK107", "SK161"]
    assert SUMMARY_RE.match(lines[-1])["warnings"] == "1"  # still counted
    assert invoke("validate", "--quiet", "--strict", "skills/warn").exit_code == 1


def test_default_path_is_the_current_folder(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree / "skills")
    result = invoke("validate", "--format", "json")
    assert [r["path"] for r in json.loads(result.stdout)] == ["bad", "good", "warn"]
    monkeypatch.chdir(tree / "skills" / "good")
    assert invoke("validate").stdout.startswith("ok: 1 checked, 1 valid")


def test_folder_without_skills_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    result = invoke("validate", "empty")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "empty:0:0: SK012 error no skills found: no folder here contains a SKILL.md"


@pytest.mark.parametrize("args", [["--bogus"], ["--format", "xml", "."], ["-x"]])
@pytest.mark.parametrize("command", ["validate", "lint"])
def test_bad_options_are_usage_errors(tree: Path, command: str, args: list[str]) -> None:
    result = invoke(command, *args)
    assert result.exit_code == 2
    assert "Usage:" in result.output and "Error:" in result.output


def test_help_documents_format_and_exit_status() -> None:
    result = invoke("validate", "--help")
    assert result.exit_code == 0
    for needle in ("path:line:col: CODE severity message", "--strict", "--format", "Exit status"):
        assert needle in result.output


def test_messages_with_control_characters_stay_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a key holding a newline must not split a diagnostic in two (or forge a second one)
    monkeypatch.chdir(tmp_path)
    write_skill(tmp_path, "demo", 'name: demo\ndescription: d\n"x\\nfake/SKILL.md:1:1: SK001 error forged": 1\n' + VERSIONED)
    result = invoke("validate", "demo")
    *lines, _ = result.stdout.strip().splitlines()
    assert len(lines) == 1 and LINE_RE.match(lines[0])["code"] == "SK161"
    assert "\\n" in lines[0]


# --------------------------------------------------- SK303: what publish would refuse (a version)


def test_a_skill_without_a_version_gets_a_note_that_never_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_skill(tmp_path, "demo", "name: demo\ndescription: A demo.\n")
    result = invoke("validate", "demo")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "demo/SKILL.md:1:1: SK303 note no metadata.version, so pack and publish refuse this skill: add metadata.version "
        "to SKILL.md (skillctl version demo 0.1.0) or pass --version",
        "ok: 1 checked, 1 valid, 0 invalid; 0 errors, 0 warnings, 1 note",
    ]
    assert invoke("validate", "--strict", "demo").exit_code == 0  # a note, documented: --strict does not fail on it
    [report] = json.loads(invoke("validate", "--format", "json", "demo").stdout)
    assert [(d["code"], d["severity"]) for d in report["diagnostics"]] == [("SK303", "info")] and report["valid"]
    assert "::notice file=demo/SKILL.md,line=1,col=1,title=SK303::" in invoke("validate", "--format", "github", "demo").stdout


@pytest.mark.parametrize("front, publishable", [
    ("name: demo\ndescription: A demo.\n", False),
    ("name: demo\ndescription: A demo.\nmetadata:\n  author: me\n", False),
    ('name: demo\ndescription: A demo.\nmetadata:\n  version: "1.0"\n', True),  # read as 1.0.0 (SK301)
    ('name: demo\ndescription: A demo.\nmetadata:\n  version: "2.1.0"\n', True),
    ('name: demo\ndescription: A demo.\nversion: "1.0.0"\n', False),  # OpenClaw's field: publish reads metadata.version
])
def test_validate_notes_exactly_the_skills_publish_refuses_for_want_of_a_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, front: str, publishable: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(tmp_path / "registry"))
    write_skill(tmp_path, "demo", front)
    [report] = json.loads(invoke("validate", "--profile", "openclaw", "--format", "json", "demo").stdout)
    noted = any(d["code"] == "SK303" for d in report["diagnostics"])
    published = invoke("publish", "--profile", "openclaw", "demo")
    assert (published.exit_code == 0) == publishable and noted == (not publishable), published.output
    if not publishable:
        assert "no version" in published.stderr
    if "\nversion:" in front:  # the note says why a version that is there does not count
        assert any("OpenClaw reads the top-level version" in d["message"] for d in report["diagnostics"])
