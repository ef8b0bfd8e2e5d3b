"""Skills as the hosted skills APIs upload them (a zip with one top folder, or one part per file)
and the canonical zip they download: the same member rules as every bundle."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from registry.helpers import write_skill
from skillctl.bundle import BundleLimits, BundleRejected, pack, read_bundle, read_file_parts, read_zip_bundle, zip_bundle

from .zips import Z, zip_bytes

SKILL_MD = b"---\nname: demo\ndescription: Demonstrates uploads.\n---\n\nBody.\n"


def never(path: str, data: bytes) -> bool:
    return False


@pytest.fixture
def contents(tmp_path: Path):
    folder = write_skill(tmp_path, "demo", files={
        "scripts/run.sh": ("#!/bin/sh\necho ok\n", 0o755), "references/ünïcode.md": "text\n", "assets/empty.txt": "",
    })
    return read_bundle(pack(folder, "demo").data)


def test_zip_bundle_reads_back_identically_and_is_canonical(contents) -> None:
    data = zip_bundle(contents)
    back = read_zip_bundle(data, expected_name="demo")
    assert (dict(back.files), back.executables, back.dirs, back.name) == (dict(contents.files), contents.executables, contents.dirs, "demo")
    assert zip_bundle(back) == data  # the same files give the same bytes
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
    assert [i.filename for i in infos] == sorted(i.filename for i in infos)  # folders before their contents
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    modes = {i.filename: i.external_attr >> 16 for i in infos}
    assert modes["demo/scripts/run.sh"] == 0o100755 and modes["demo/SKILL.md"] == 0o100644 and modes["demo/scripts/"] == 0o040755


def test_read_zip_bundle_takes_zips_other_tools_make(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "demo", files={"scripts/run.sh": ("#!/bin/sh\n", 0o755)})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            zf.write(path, f"demo/{path.relative_to(folder).as_posix()}")
    back = read_zip_bundle(out.getvalue())
    assert back.name == "demo" and back.executables == {"scripts/run.sh"} and set(back.files) == {"SKILL.md", "scripts/run.sh"}


def test_refuses_a_zip_with_files_at_the_root_and_says_how_to_lay_it_out() -> None:
    with pytest.raises(BundleRejected, match="one folder named after the skill") as caught:
        read_zip_bundle(zip_bytes([Z("SKILL.md", SKILL_MD)]))
    assert caught.value.rule == "one top folder"


@pytest.mark.parametrize("member, rule", [
    (Z("demo/../x", b"x"), "no '..'"),
    (Z("demo/a\\b", b"x"), "backslash"),
    (Z("other/x", b"x"), "one top folder"),
    (Z("demo/link", b"SKILL.md", mode=0o120777), "no links"),
    (Z("demo/skill.md", b"x"), "case"),
])
def test_read_zip_bundle_refuses_evil_members(member: Z, rule: str) -> None:
    with pytest.raises(BundleRejected) as caught:
        read_zip_bundle(zip_bytes([Z("demo/SKILL.md", SKILL_MD), member]))
    assert rule in str(caught.value)


def test_read_zip_bundle_names_the_expected_skill() -> None:
    with pytest.raises(BundleRejected, match="expected 'other'"):
        read_zip_bundle(zip_bytes([Z("demo/SKILL.md", SKILL_MD)]), expected_name="other")


def test_read_file_parts_applies_the_member_rules_and_the_callers_modes() -> None:
    parts = [("demo/SKILL.md", SKILL_MD), ("demo/scripts/run.py", b"#!/usr/bin/env python3\n"), ("demo/data/x.csv", b"a,b\n")]
    got = read_file_parts(parts, lambda rel, data: data.startswith(b"#!"))
    assert got.name == "demo" and got.executables == {"scripts/run.py"} and got.dirs == ("data", "scripts")
    assert dict(got.files) == {p.partition("/")[2]: d for p, d in parts}


@pytest.mark.parametrize("parts, rule", [
    ([("SKILL.md", SKILL_MD)], "one folder named after the skill"),
    ([("demo/SKILL.md", SKILL_MD), ("demo/SKILL.md", SKILL_MD)], "twice"),
    ([("demo/SKILL.md", SKILL_MD), ("demo/README.md", b"x"), ("demo/readme.md", b"y")], "case"),
    ([("demo/SKILL.md", SKILL_MD), ("/etc/passwd", b"x")], "absolute"),
    ([("demo/SKILL.md", SKILL_MD), ("demo/../../x", b"x")], "'..'"),
    ([("demo/x", b"x")], "SKILL.md"),
    ([], "no members"),
])
def test_read_file_parts_refuses(parts, rule: str) -> None:
    with pytest.raises(BundleRejected) as caught:
        read_file_parts(parts, never)
    assert rule in str(caught.value)


def test_read_file_parts_enforces_the_caps() -> None:
    limits = BundleLimits(max_files=2, max_file_size=10)
    with pytest.raises(BundleRejected, match="max_file_size"):
        read_file_parts([("demo/SKILL.md", SKILL_MD)], never, limits=limits)
    with pytest.raises(BundleRejected, match="max_files"):
        read_file_parts([("demo/SKILL.md", b"x"), ("demo/a", b"x"), ("demo/b", b"x")], never, limits=limits)
