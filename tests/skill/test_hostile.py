"""Hostile and broken input: every case ends as a clear diagnostic, never a traceback or a hang.

Each builder makes one bad tree; the specific test checks the diagnostic, and
``test_cli_never_shows_a_traceback`` runs the real CLI (text and JSON) over all of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from skillctl.skill.document import MAX_SKILL_MD_BYTES, parse_skill_md
from skillctl.skill.files import MAX_DEPTH, MAX_ENTRIES
from skillctl.skill.validate import check_skill

from .helpers import (
    BODY,
    VERSIONED,
    assert_clean_output,
    check,
    codes,
    front_matter,
    make_skill,
    nest,
    only,
    run_cli_as_nobody,
    touch_many,
    with_code,
)

VALID_MD = ("---\n" + front_matter() + "---\n" + BODY).encode()
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
BILLION_LAUGHS = (
    "name: demo\ndescription: d\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
)


def _read_bytes_so_far() -> int:
    """Bytes this process has read through read() and friends (Linux /proc accounting)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


# ----------------------------------------------------------------------------- SKILL.md bytes


def test_binary_skill_md(in_tmp: Path) -> None:
    make_skill(in_tmp, skill_md=PNG)
    assert codes(only(check("demo"))) == ["SK008"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_skill_md_say_re_save_as_utf8(in_tmp: Path, encoding: str) -> None:
    text = VALID_MD.decode()
    raw = text.encode(encoding) if encoding != "utf-16-be" else b"\xfe\xff" + text.encode(encoding)
    make_skill(in_tmp, skill_md=raw)
    [d] = only(check("demo")).diagnostics
    assert d.code == "SK007" and (d.line, d.column) == (1, 1)
    assert encoding[:6].upper() in d.message and "UTF-8" in d.message


def test_invalid_utf8_points_at_the_bad_byte_in_characters(in_tmp: Path) -> None:
    # line 8 of the file; "Grüße " is 6 characters (8 bytes) before the bad byte
    raw = ("---\n" + front_matter() + "---\n\n# Demo\n\n").encode() + "Grüße ".encode() + b"\xc3\x28 end\n"
    make_skill(in_tmp, skill_md=raw)
    [d] = only(check("demo")).diagnostics
    assert (d.code, d.line, d.column) == ("SK007", 8, 7), d.format()
    assert "0xc3" in d.message


def test_fifty_megabyte_skill_md_is_refused_after_reading_one_mebibyte(in_tmp: Path) -> None:
    folder = make_skill(in_tmp, skill_md=VALID_MD)
    with open(folder / "SKILL.md", "ab") as fh:
        chunk = b"Padding line of a runaway generated SKILL.md file.\n" * 20_000  # ~1 MB
        for _ in range(50):
            fh.write(chunk)
    assert (folder / "SKILL.md").stat().st_size > 50_000_000
    before = _read_bytes_so_far()
    report = check_skill(folder, "demo")
    read = _read_bytes_so_far() - before
    assert read <= MAX_SKILL_MD_BYTES + 64 * 1024, f"read {read} bytes"
    [d] = with_code(report, "SK009")
    assert "larger than 1 MiB" in d.message
    assert not report.valid()


def test_parser_refuses_oversized_bytes_without_parsing() -> None:
    doc, [d] = parse_skill_md(VALID_MD + b"x" * MAX_SKILL_MD_BYTES, "S")
    assert doc is None and d.code == "SK009"
    doc, diags = parse_skill_md(VALID_MD + b"x" * (MAX_SKILL_MD_BYTES - len(VALID_MD)), "S")
    assert doc is not None and not diags


# ------------------------------------------------------------------------------------- YAML


def test_billion_laughs_is_refused_without_expanding(in_tmp: Path) -> None:
    make_skill(in_tmp, front_matter_text=BILLION_LAUGHS)  # 9^9 "lol"s if expanded
    [d] = only(check("demo")).diagnostics
    assert d.code == "SK005" and "alias" in d.message


def test_self_referencing_alias(in_tmp: Path) -> None:
    make_skill(in_tmp, front_matter_text="name: demo\ndescription: d\nmetadata: &m\n  self: *m\n")
    assert codes(only(check("demo"))) == ["SK005"]


# The front matter's mapping is one level, so a description nested 63 deep is 64 levels: the
# most skillctl.nesting lets through (libyaml alone would refuse past 1000).
@pytest.mark.parametrize("depth", [63, 64, 100, 800, 1100, 30000])
def test_deeply_nested_yaml(in_tmp: Path, depth: int) -> None:
    make_skill(in_tmp, front_matter_text="name: demo\ndescription: " + "[" * depth + "]" * depth + "\n")
    found = only(check("demo")).diagnostics
    # within the bound: a list is not a description; deeper: refused as YAML, located
    assert [d.code for d in found] == (["SK112"] if depth <= 63 else ["SK005"])
    if depth > 63:
        assert "nested too deeply: over 64 levels" in found[0].message and (found[0].line, found[0].column) == (3, 77)


@pytest.mark.parametrize("depth", [63, 64, 900, 30000])
def test_deeply_nested_block_yaml(in_tmp: Path, depth: int) -> None:
    # block nesting on one line ("- - - … x"): a list, or refused past the bound
    make_skill(in_tmp, front_matter_text="name: demo\ndescription:\n  " + "- " * depth + "x\n")
    found = only(check("demo")).diagnostics
    assert [d.code for d in found] == (["SK112"] if depth <= 63 else ["SK005"])
    if depth > 63:
        assert "nested too deeply: over 64 levels" in found[0].message and found[0].line == 4


def test_duplicate_keys_at_top_level_and_in_metadata(in_tmp: Path) -> None:
    fm = front_matter(extra='metadata:\n  version: "1.0.0"\n  version: "2.0.0"\n') + "description: again\n"
    make_skill(in_tmp, front_matter_text=fm)
    found = with_code(only(check("demo")), "SK010")
    assert [(d.line, d.column) for d in found] == [(6, 3), (7, 1)]
    assert "'metadata.version'" in found[0].message and "'description'" in found[1].message


def test_explicit_yaml_tags_never_crash(in_tmp: Path) -> None:
    # PyYAML's constructor raises AttributeError on a malformed !!timestamp
    for i, tag in enumerate(["!!timestamp abc", "!!binary xx", "!!python/object:os.system x", "!!float abc", "!!omap [a]"]):
        make_skill(in_tmp, folder=f"s{i}", front_matter_text=f"name: s{i}\ndescription: {tag}\n")
        assert codes(only(check(f"s{i}"))) == ["SK005"], tag


# ----------------------------------------------------------------------------- the folder tree


def test_folder_nested_200_levels_inside_a_skill(in_tmp: Path) -> None:
    folder = make_skill(in_tmp)
    nest(folder, 200)
    [d] = only(check("demo")).diagnostics
    assert d.code == "SK235" and d.file == "demo/" + "/".join(["d"] * (MAX_DEPTH + 1))


def test_folder_nested_200_levels_in_a_repo(in_tmp: Path) -> None:
    deep = nest(in_tmp / "repo", 200)
    make_skill(deep.parent, folder="d", name="d")  # a skill at the bottom, beyond the walk's depth
    make_skill(in_tmp / "repo", name="top")
    top, note = check("repo")
    assert (top.path, top.is_skill, top.diagnostics) == ("repo/top", True, ())
    # the search stopped at its depth limit, and says so (a note: never a failure)
    assert (note.path, note.is_skill, codes(note), note.valid(strict=True)) == ("repo", False, ["SK302"], True)
    assert "e.g. d/d/d/d/d/d" in note.diagnostics[0].message


def test_skill_folder_that_is_a_symlink_loop(in_tmp: Path) -> None:
    os.symlink("loop", in_tmp / "loop")
    [d] = only(check("loop")).diagnostics
    assert (d.code, d.file) == ("SK012", "loop") and "loop" in d.message


def test_symlink_to_a_skill_named_on_the_command_line_is_followed(in_tmp: Path) -> None:
    make_skill(in_tmp / "real", name="demo")
    os.symlink("real/demo", in_tmp / "demo")
    report = only(check("demo"))
    assert report.valid(strict=True), [d.format() for d in report.diagnostics]


def test_directory_symlink_loop_inside_a_skill(in_tmp: Path) -> None:
    folder = make_skill(in_tmp)
    (folder / "references").mkdir()
    os.symlink("..", folder / "references" / "up")
    os.symlink("self", folder / "self")
    report = only(check("demo"))
    assert [(d.code, d.file) for d in report.diagnostics] == [("SK231", "demo/references/up"), ("SK231", "demo/self")]


def test_directory_symlink_loop_in_a_repo_is_not_followed(in_tmp: Path) -> None:
    make_skill(in_tmp / "repo", name="demo")
    os.symlink("..", in_tmp / "repo" / "again")
    assert [r.path for r in check("repo")] == ["repo/demo"]


def test_directory_named_skill_md(in_tmp: Path) -> None:
    (in_tmp / "demo" / "SKILL.md").mkdir(parents=True)
    [d] = only(check("demo")).diagnostics
    assert (d.code, d.file) == ("SK011", "demo/SKILL.md") and "not a regular file" in d.message


def test_skill_md_that_is_a_symlink(in_tmp: Path) -> None:
    folder = make_skill(in_tmp)
    (folder / "SKILL.md").rename(in_tmp / "elsewhere.md")
    os.symlink("../elsewhere.md", folder / "SKILL.md")
    [d] = only(check("demo")).diagnostics
    assert (d.code, d.file) == ("SK011", "demo/SKILL.md") and "symbolic link" in d.message


def _run_cli_subprocess(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """The real console entry point in a child process: a hang becomes a TimeoutExpired."""
    code = "import sys; from skillctl.cli import main; main(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_fifo_inside_a_skill_does_not_block(in_tmp: Path) -> None:
    folder = make_skill(in_tmp, front_matter_text=front_matter(extra=VERSIONED), files={"scripts/run.sh": ("#!/bin/sh\n", 0o755)})
    os.mkfifo(folder / "scripts" / "feed")  # scripts/ files are opened for the shebang check
    os.mkfifo(folder / ".skillignore")  # the ignore file is read before the scan
    result = _run_cli_subprocess(["validate", "--format", "json", "demo"], in_tmp)
    assert result.returncode == 0, result.stderr
    diags = json.loads(result.stdout)[0]["diagnostics"]
    assert [(d["code"], d["file"]) for d in diags] == [("SK234", "demo/scripts/feed")]


def test_fifo_named_skill_md_does_not_block(in_tmp: Path) -> None:
    (in_tmp / "demo").mkdir()
    os.mkfifo(in_tmp / "demo" / "SKILL.md")
    result = _run_cli_subprocess(["validate", "demo"], in_tmp)
    assert result.returncode == 1
    assert "demo/SKILL.md:0:0: SK011 error SKILL.md is not a regular file" in result.stdout


def test_twenty_five_thousand_files_hit_the_entry_cap(in_tmp: Path, invoke) -> None:
    folder = make_skill(in_tmp, front_matter_text=front_matter(extra=VERSIONED))
    touch_many(folder / "data", 25_000)
    report = only(check("demo"))
    assert codes(report) == ["SK236"]
    assert str(MAX_ENTRIES) in report.diagnostics[0].message
    # and through the CLI (kept out of HOSTILE below: one 25k-file tree is enough to build)
    text = invoke("validate", "demo")
    assert text.exit_code == 0 and text.stdout.startswith("demo:0:0: SK236 warning more than 20000")
    assert_clean_output(text.output)
    [j] = json.loads(invoke("validate", "--format", "json", "demo").stdout)
    assert [d["code"] for d in j["diagnostics"]] == ["SK236"]


# ------------------------------------------------------------------- permissions (as nobody)


def _validate_as_nobody(cwd: Path, *args: str) -> tuple[int, list[dict], str]:
    result = run_cli_as_nobody(["validate", "--format", "json", *args], cwd)
    assert result["uid"] == 65534 and result["exception"] is None, result
    assert_clean_output(result["output"])
    return result["exit_code"], json.loads(result["output"]), result["output"]


def test_unreadable_file_and_folder_inside_a_skill(shared_tmp: Path) -> None:
    folder = make_skill(shared_tmp, front_matter_text=front_matter(extra=VERSIONED), body=BODY + "\nSee [notes](references/notes.md).\n", files={
        "references/notes.md": ("# Notes\n", 0o000),
        "scripts/run.sh": ("#!/bin/sh\n", 0o700),  # executable and readable by root only
        "private/data.txt": "x\n",
    })
    os.chmod(folder / "private", 0o000)
    code, [report], _ = _validate_as_nobody(shared_tmp, "demo")
    found = sorted((d["code"], d["file"]) for d in report["diagnostics"])
    assert found == [
        ("SK234", "demo/private"),
        ("SK234", "demo/references/notes.md"),
        ("SK234", "demo/scripts/run.sh"),
    ], report
    assert code == 0 and report["valid"]  # warnings: the front matter itself is fine


def test_unreadable_skill_md(shared_tmp: Path) -> None:
    folder = make_skill(shared_tmp)
    os.chmod(folder / "SKILL.md", 0o000)
    code, [report], _ = _validate_as_nobody(shared_tmp, "demo")
    assert code == 1
    [d] = report["diagnostics"]
    assert (d["code"], d["file"]) == ("SK011", "demo/SKILL.md") and "ermission denied" in d["message"]


def test_unreadable_skill_folder(shared_tmp: Path) -> None:
    folder = make_skill(shared_tmp)
    os.chmod(folder, 0o000)
    code, reports, _ = _validate_as_nobody(shared_tmp, "demo")
    assert code == 1
    assert [d["code"] for r in reports for d in r["diagnostics"]] == ["SK011"]
    assert "ermission denied" in reports[0]["diagnostics"][0]["message"]


def test_unreadable_folder_in_a_repo(shared_tmp: Path) -> None:
    make_skill(shared_tmp / "repo", name="ok")
    (shared_tmp / "repo" / "locked").mkdir()
    os.chmod(shared_tmp / "repo" / "locked", 0o000)
    code, reports, _ = _validate_as_nobody(shared_tmp, "repo")
    assert code == 1
    assert [(r["path"], r["valid"]) for r in reports] == [("repo/locked", False), ("repo/ok", True)]


# ------------------------------------------------------------------ CLI over every hostile case


def _deep_skill(root: Path) -> str:
    nest(make_skill(root), 200)
    return "demo"


def _fifo_skill(root: Path) -> str:
    os.mkfifo(make_skill(root) / "pipe")
    return "demo"


def _loop_skill(root: Path) -> str:
    os.symlink("loop", root / "loop")
    return "loop"


def _inner_loop(root: Path) -> str:
    os.symlink(".", make_skill(root) / "again")
    return "demo"


def _dir_skill_md(root: Path) -> str:
    (root / "demo" / "SKILL.md").mkdir(parents=True)
    return "demo"


def _huge(root: Path) -> str:
    folder = make_skill(root, skill_md=VALID_MD)
    os.truncate(folder / "SKILL.md", 50_000_000)  # sparse: NUL bytes past the text
    return "demo"


def _md(raw: bytes) -> Callable[[Path], str]:
    def build(root: Path) -> str:
        make_skill(root, skill_md=raw)
        return "demo"

    return build


def _fm(text: str) -> Callable[[Path], str]:
    def build(root: Path) -> str:
        make_skill(root, front_matter_text=text)
        return "demo"

    return build


HOSTILE: dict[str, Callable[[Path], str]] = {
    "binary": _md(PNG),
    "utf16": _md(VALID_MD.decode().encode("utf-16")),
    "bad-utf8": _md(VALID_MD + b"\xff\xfe broken"),
    "huge": _huge,
    "billion-laughs": _fm(BILLION_LAUGHS),
    "deep-yaml": _fm("name: " + "[" * 800 + "]" * 800 + "\n"),
    "duplicate-keys": _fm(front_matter() + "name: demo\n"),
    "yaml-tag": _fm("name: demo\ndescription: !!timestamp x\n"),
    "deep-folders": _deep_skill,
    "symlink-loop": _loop_skill,
    "inner-symlink-loop": _inner_loop,
    "dir-named-skill-md": _dir_skill_md,
    "fifo": _fifo_skill,
}


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_cli_never_shows_a_traceback(in_tmp: Path, invoke, case: str, fmt: str) -> None:
    path = HOSTILE[case](in_tmp)
    result = invoke("validate", "--format", fmt, path)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1), result.output
    assert_clean_output(result.output)
    if fmt == "json":
        reports = json.loads(result.stdout)
        assert reports and all(r["diagnostics"] for r in reports)
    else:
        lines = result.stdout.strip().splitlines()
        assert len(lines) >= 2 and all(" SK" in line for line in lines[:-1]), result.stdout
        assert all(len(line) < 400 for line in lines), "one short line per problem"
