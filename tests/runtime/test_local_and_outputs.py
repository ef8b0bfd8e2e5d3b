"""The local backend's own paths reach the agent, and outputs copied back out are treated as
hostile (links and escapes skipped)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from bundle.archives import M, tar_bytes

from skillctl.errors import SkillctlError, StagingError
from skillctl.runtime.loader import load_skills
from skillctl.runtime.prompt import system_prompt
from skillctl.runtime.staging import extract_outputs, inputs_tar
from skillctl.sandbox.local_backend import LocalSandbox


def test_local_backend_catalog_locations_exist_and_are_readable(example_registry) -> None:
    with LocalSandbox(allow_unsafe_local=True) as sb:
        loaded = load_skills(["tally"], example_registry, sb)
        location = loaded.skills[0].location
        assert location.startswith(sb.skills_root) and location in loaded.catalog_text
        result = sb.exec(f"head -2 {location}")
        assert result.ok and result.stdout.startswith("---\nname: tally"), result


def test_system_prompt_names_the_sandbox_paths() -> None:
    text = system_prompt("<available_skills>\n</available_skills>\n", workspace="/w/here", skills_root="/s/there")
    assert "Your working folder is /w/here" in text and "installed under /s/there" in text
    assert "/workspace" not in text
    assert system_prompt("") == system_prompt("", workspace="/workspace", skills_root="/skills")


def test_outputs_strip_the_top_folder_and_keep_files(tmp_path: Path) -> None:
    data = tar_bytes([M("workspace/a.txt", b"A"), M("workspace/d/b.txt", b"B")])
    written = extract_outputs(data, tmp_path / "out").files
    assert sorted(written) == ["a.txt", "d/b.txt"]
    assert (tmp_path / "out" / "d" / "b.txt").read_bytes() == b"B"


def test_outputs_skip_links_and_escapes(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    data = tar_bytes([
        M("workspace/passwd", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
        M("workspace/hard", type=tarfile.LNKTYPE, linkname="/etc/passwd"),
        M("workspace/../../outside.txt", b"escaped"),
        M("/abs.txt", b"absolute"),
        M("workspace/ok.txt", b"ok"),
    ])
    copied = extract_outputs(data, tmp_path / "out")
    assert copied.files == ["ok.txt"]
    assert [name for name, _ in copied.skipped] == ["passwd", "hard", "workspace/../../outside.txt", "/abs.txt"]
    assert not outside.exists() and not (tmp_path / "out" / "passwd").exists()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["ok.txt"]


def test_outputs_copy_each_hard_link_as_a_file_of_its_own(tmp_path: Path) -> None:
    data = tar_bytes([
        M("workspace/a.txt", b"shared"),
        M("workspace/sub/b.txt", type=tarfile.LNKTYPE, linkname="workspace/a.txt"),
        M("workspace/orphan", type=tarfile.LNKTYPE, linkname="workspace/never-copied"),
    ])
    copied = extract_outputs(data, tmp_path / "out")
    assert copied.files == ["a.txt", "sub/b.txt"] and copied.hard_links == [("sub/b.txt", "a.txt")]
    assert copied.skipped == [("orphan", "hard link to workspace/never-copied, which was not copied")]
    a, b = tmp_path / "out" / "a.txt", tmp_path / "out" / "sub" / "b.txt"
    assert a.read_bytes() == b.read_bytes() == b"shared" and a.stat().st_ino != b.stat().st_ino
    assert "1 hard link copied as separate files: sub/b.txt (= a.txt)" in copied.notes()


def test_outputs_drop_setuid_and_setgid_bits_and_keep_odd_but_valid_names(tmp_path: Path) -> None:
    data = tar_bytes([M("workspace/tool", b"#!/bin/sh\n", mode=0o6755), M("workspace/plain", b"x", mode=0o4644),
                      M("workspace/12:00 report.txt", b"r")])
    copied = extract_outputs(data, tmp_path / "out")
    out = tmp_path / "out"
    assert (out / "tool").stat().st_mode & 0o7777 == 0o755 and (out / "plain").stat().st_mode & 0o7777 == 0o644
    assert copied.stripped == ["tool", "plain"] and (out / "12:00 report.txt").read_bytes() == b"r"


def test_an_output_dated_beyond_any_file_system_is_still_copied(tmp_path: Path) -> None:
    copied = extract_outputs(tar_bytes([M("workspace/far.txt", b"f", pax={"mtime": "1e300"})]), tmp_path / "out")
    assert copied.files == ["far.txt"] and (tmp_path / "out" / "far.txt").read_bytes() == b"f"


def test_outputs_are_read_as_a_stream_of_any_chunking(tmp_path: Path) -> None:
    data = tar_bytes([M("workspace/big.bin", bytes(range(256)) * 4096), M("workspace/small.txt", b"s")])
    pieces = (data[i:i + 777] for i in range(0, len(data), 777))
    assert extract_outputs(pieces, tmp_path / "out").files == ["big.bin", "small.txt"]
    assert (tmp_path / "out" / "big.bin").read_bytes() == bytes(range(256)) * 4096


def test_outputs_into_an_existing_folder_keep_its_files_and_clashes_change_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "mine.txt").write_text("mine", "utf-8")
    (out / "sub" / "old.txt").write_text("old", "utf-8")
    extract_outputs(tar_bytes([M("workspace/sub/new.txt", b"new"), M("workspace/mine.txt", b"theirs"),
                               M("workspace/empty", type=tarfile.DIRTYPE, mode=0o755)]), out)
    assert (out / "mine.txt").read_text() == "theirs" and (out / "sub" / "old.txt").read_text() == "old"
    assert (out / "sub" / "new.txt").read_text() == "new" and (out / "empty").is_dir()
    assert sorted(p.name for p in out.iterdir()) == ["empty", "mine.txt", "sub"]  # no staging folder left
    # A file where the archive has a folder: refused before anything moves.
    (out / "d").write_text("a file", "utf-8")
    with pytest.raises(SkillctlError, match="is in the way of a folder"):
        extract_outputs(tar_bytes([M("workspace/a.txt", b"A"), M("workspace/d/x.txt", b"X")]), out)
    assert sorted(p.name for p in out.iterdir()) == ["d", "empty", "mine.txt", "sub"]


def test_outputs_never_write_through_a_link_in_the_destination(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").symlink_to(elsewhere)
    with pytest.raises(SkillctlError, match="is in the way of a folder"):
        extract_outputs(tar_bytes([M("workspace/sub/x.txt", b"X")]), out)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("member", [
    M("workspace/x", b"x", pax={"SCHILY.xattr.security.capability": "v"}),  # a file capability
    M("workspace/s", type=tarfile.GNUTYPE_SPARSE),
    M("workspace/g", type=tarfile.XGLTYPE),
], ids=["xattr", "sparse", "global-header"])
def test_outputs_hold_the_archive_itself_to_the_strict_rules(tmp_path: Path, member: M) -> None:
    with pytest.raises(SkillctlError, match="not an archive skillctl accepts"):
        extract_outputs(tar_bytes([M("workspace/ok.txt", b"ok"), member]), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_output_archive_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    data = tar_bytes([M("workspace/a.txt", b"A" * 2000)])
    with pytest.raises(SkillctlError, match="not an archive skillctl accepts: .*truncated"):
        extract_outputs(data[:1500], tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_outputs_over_the_size_or_count_cap_are_refused_before_writing_anything(tmp_path: Path) -> None:
    data = tar_bytes([M("workspace/small.txt", b"ok"), M("workspace/big.bin", b"x" * 2048)])
    with pytest.raises(SkillctlError, match="exceeds"):
        extract_outputs(data, tmp_path / "out", max_bytes=1024)
    many = tar_bytes([M(f"workspace/f{i}.txt", b"") for i in range(5)])
    with pytest.raises(SkillctlError, match="has more than 4 entries; the limit is 4"):
        extract_outputs(many, tmp_path / "out", max_files=4)
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_outputs_into_an_unwritable_place_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file, not a folder", "utf-8")
    with pytest.raises(SkillctlError, match="cannot copy the sandbox's output into .*out"):
        extract_outputs(tar_bytes([M("workspace/a.txt", b"A")]), tmp_path / "out")


def test_inputs_with_a_link_are_refused_and_folders_keep_their_name(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.txt").write_text("a", "utf-8")
    with tarfile.open(fileobj=io.BytesIO(inputs_tar([folder])), mode="r:") as tar:
        assert tar.getnames() == ["project", "project/sub", "project/sub/a.txt"]
        assert {m.name: (m.uid, m.mode) for m in tar.getmembers()}["project/sub/a.txt"] == (0, 0o644)
    (folder / "sub" / "link").symlink_to("/etc/passwd")
    with pytest.raises(StagingError, match=r"inputs: .*project/sub/link is a symbolic link; copy the file itself"):
        inputs_tar([folder])
