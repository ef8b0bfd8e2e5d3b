"""Well-known artifacts (archives with the files at the root, .tar.gz or .zip, and lone SKILL.md
files) under the same hostile-archive rules as bundles. Tests are named after what they stop.

Every refusal is one line naming the archive, the member as the archive spells it, and the rule.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tarfile
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

from tools import require_tool

from skillctl.bundle import BundleLimits, BundleRejected, archive_tar_gz, read_artifact, read_bundle
from skillctl.bundle.archive import RULE_FORMAT, RULE_SKILL_MD
from skillctl.bundle.zipscan import RULE_ZIP, RULE_ZIP_AGREE, RULE_ZIP_CRC, RULE_ZIP_FEATURES, RULE_ZIP_LAYOUT

from .archives import M, gz, tar_bytes
from .zips import SKILL_MD, Z, deflate, skill_members, unicode_path_extra, zip_bytes

MiB = 1 << 20


def refused(data: bytes, *, member: str | None, rule: str, limits: BundleLimits = BundleLimits(), kind: str = "archive") -> BundleRejected:
    with pytest.raises(BundleRejected) as caught:
        read_artifact(data, kind, expected_name="evil", limits=limits, source="evil.zip")
    err = caught.value
    message = str(err)
    assert "\n" not in message, message
    assert message.startswith("archive evil.zip: "), message
    assert message.endswith("ask its publisher to rebuild it") or err.rule.startswith("max_"), message
    assert err.rule == rule, message
    assert err.member == member, message
    return err


def rootless_tgz(*members: M) -> bytes:
    return gz(tar_bytes([M("SKILL.md", SKILL_MD), *members]))


# --- what other tools publish is accepted ---------------------------------------------------


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    root = tmp_path / "evil"
    (root / "scripts").mkdir(parents=True)
    (root / "SKILL.md").write_bytes(SKILL_MD)
    (root / "scripts" / "run.sh").write_text("#!/bin/sh\necho ok\n")
    os.chmod(root / "scripts" / "run.sh", 0o755)
    (root / "references").mkdir()
    (root / "references" / "notes.md").write_text("notes\n")
    return root


EXPECTED = {"SKILL.md", "scripts/run.sh", "references/notes.md"}


def _check(contents) -> None:
    assert contents.name == "evil"
    assert set(contents.files) == EXPECTED
    assert contents.executables == {"scripts/run.sh"}
    assert set(contents.dirs) == {"scripts", "references"}


def test_reads_tar_made_with_dot_root_like_tar_minus_C(skill_dir: Path, tmp_path: Path):
    require_tool("tar")
    out = tmp_path / "a.tar.gz"
    subprocess.run(["tar", "-C", str(skill_dir), "-czf", str(out), "."], check=True)
    _check(read_artifact(out.read_bytes(), "archive", expected_name="evil"))


def test_reads_zip_made_with_info_zip(skill_dir: Path, tmp_path: Path):
    require_tool("zip")
    subprocess.run(f"cd {skill_dir} && zip -qr {tmp_path / 'a.zip'} .", shell=True, check=True)
    _check(read_artifact((tmp_path / "a.zip").read_bytes(), "archive", expected_name="evil"))


def test_reads_zip_made_with_python_zipfile_including_data_descriptors(skill_dir: Path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in sorted(EXPECTED):
            zf.write(skill_dir / rel, rel)
    _check(read_artifact(buf.getvalue(), "archive", expected_name="evil"))
    # A streamed writer (unseekable output) puts sizes in data descriptors after each entry.
    class Unseekable(io.RawIOBase):
        def __init__(self) -> None:
            self.buf = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b) -> int:
            self.buf += b
            return len(b)

    sink = Unseekable()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in sorted(EXPECTED):
            with zf.open(rel, "w") as fh:
                fh.write((skill_dir / rel).read_bytes())
    data = bytes(sink.buf)
    assert b"PK\x07\x08" in data
    contents = read_artifact(data, "archive", expected_name="evil")
    assert set(contents.files) == EXPECTED


def test_reads_git_archive_with_its_global_comment_header(skill_dir: Path, tmp_path: Path):
    require_tool("git")
    git = ["git", "-C", str(skill_dir), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    data = subprocess.run(git + ["archive", "--format=tar.gz", "HEAD"], check=True, capture_output=True).stdout
    _check(read_artifact(data, "archive", expected_name="evil"))


def test_written_archive_has_files_at_the_root_and_reads_back_identically(skill_dir: Path):
    from skillctl.bundle import pack

    bundle = read_bundle(pack(skill_dir, "evil").data)
    first, second = archive_tar_gz(bundle), archive_tar_gz(bundle)
    assert first.data == second.data  # reproducible
    with tarfile.open(fileobj=io.BytesIO(first.data)) as tf:
        names = tf.getnames()
        assert all(m.uid == 0 and m.mtime == 315_532_800 and m.uname == "" for m in tf.getmembers())
    assert names == ["SKILL.md", "references", "references/notes.md", "scripts", "scripts/run.sh"]
    back = read_artifact(first.data, "archive", expected_name="evil")
    assert dict(back.files) == dict(bundle.files) and back.executables == bundle.executables


def test_reads_lone_skill_md():
    contents = read_artifact(SKILL_MD, "skill-md", expected_name="evil")
    assert dict(contents.files) == {"SKILL.md": SKILL_MD} and contents.dirs == ()


# --- paths and member types, in both formats ------------------------------------------------


@pytest.mark.parametrize(
    "name, rule",
    [
        ("../x", "no '..'"),
        ("a/../../x", "no '..'"),
        ("/etc/evil", "no absolute paths"),
        ("a\\..\\x", "no backslashes"),
        ("C:/Windows/x", "no ':' (Windows drives and streams)"),
        ("ok\nforged", "no NUL or control characters"),
        ("a//b", "no '.' or empty path components"),
    ],
)
def test_refuses_evil_paths_in_zip_and_tar(name: str, rule: str):
    refused(zip_bytes(skill_members() + [Z(name, b"pwned")]), member=name, rule=rule)
    refused(rootless_tgz(M(name, b"pwned")), member=name, rule=rule)


def test_refuses_evil_zip_symlink():
    refused(zip_bytes(skill_members() + [Z("link", b"/etc/passwd", mode=0o120777)]), member="link", rule="no links")


def test_refuses_evil_tar_symlink_at_the_root():
    refused(rootless_tgz(M("link", type=tarfile.SYMTYPE, linkname="/etc/passwd")), member="link", rule="no links")


def test_refuses_evil_zip_device_and_fifo():
    refused(zip_bytes(skill_members() + [Z("dev", mode=0o020644)]), member="dev", rule="regular files and folders only")
    refused(zip_bytes(skill_members() + [Z("fifo", mode=0o010644)]), member="fifo", rule="regular files and folders only")


def test_refuses_evil_zip_duplicate_names():
    refused(zip_bytes(skill_members() + [Z("a.txt", b"1"), Z("a.txt", b"2")]), member="a.txt", rule="no duplicate members")


def test_refuses_evil_zip_duplicate_spelled_with_dot_slash():
    refused(zip_bytes(skill_members() + [Z("a.txt", b"1"), Z("./a.txt", b"2")]), member="a.txt", rule="no duplicate members")


def test_refuses_evil_zip_case_colliding_names():
    refused(
        zip_bytes(skill_members() + [Z("README.md", b"1"), Z("readme.md", b"2")]),
        member="readme.md",
        rule="no paths that differ only in case or Unicode normalisation",
    )


def test_refuses_evil_zip_folder_bit_without_slash():
    refused(zip_bytes(skill_members() + [Z("dir", mode=0o040755)]), member="dir", rule=RULE_ZIP)


def test_refuses_zip_name_that_is_not_utf8():
    refused(zip_bytes(skill_members() + [Z(b"caf\xe9.txt", b"x", flags=0)]), member="caf\ufffd.txt", rule="UTF-8 paths")


# --- structure: what makes two zip readers disagree -----------------------------------------


def test_refuses_evil_zip_with_an_entry_prepended():
    # An entry no central directory names: readers that scan local headers see it, we would not.
    hidden = zip_bytes([Z("hidden.sh", b"rm -rf /")])
    err = refused(zip_bytes(skill_members(), prefix=hidden[: hidden.index(b"PK\x01\x02")]), member="SKILL.md", rule=RULE_ZIP_LAYOUT)
    assert "gap" in str(err)


def test_refuses_evil_zip_with_a_stub_prepended_like_a_self_extractor():
    refused(zip_bytes(skill_members(), prefix=b"MZ\x90\x00 stub"), member=None, rule=RULE_FORMAT)


def test_refuses_evil_zip_with_bytes_after_the_end_record():
    data = zip_bytes(skill_members()) + b"trailing"
    refused(data, member=None, rule=RULE_ZIP)


def test_refuses_evil_zip_with_a_hidden_entry_between_entries_and_directory():
    hidden = zip_bytes([Z("hidden.sh", b"rm -rf /")])
    refused(zip_bytes(skill_members(), gap=hidden[: hidden.index(b"PK\x01\x02")]), member=None, rule=RULE_ZIP_LAYOUT)


def test_refuses_evil_zip_overlapping_entries_better_zip_bomb():
    # Two names sharing one local entry: the kernel of the overlapping-file zip bomb.
    members = skill_members() + [Z("a.txt", b"A" * 1000), Z("b.txt", b"A" * 1000, offset_of=1)]
    refused(zip_bytes(members), member="b.txt", rule=RULE_ZIP_LAYOUT)


def test_refuses_evil_zip_local_name_differs_from_central_directory():
    members = skill_members() + [Z("innocent.txt", b"x", local_name=b"../../evil.sh")]
    refused(zip_bytes(members), member="innocent.txt", rule=RULE_ZIP_AGREE)


def test_refuses_evil_zip_local_flags_differ():
    members = skill_members() + [Z("a.txt", b"x", local_flags=0)]
    refused(zip_bytes(members), member="a.txt", rule=RULE_ZIP_AGREE)


def test_refuses_evil_zip_unicode_path_field_renaming_the_member():
    extra = unicode_path_extra(b"notes.txt", b"../../evil.sh")
    refused(zip_bytes(skill_members() + [Z("notes.txt", b"x", extra=extra)]), member="notes.txt", rule=RULE_ZIP_AGREE)


def test_accepts_unicode_path_field_repeating_the_name():
    extra = unicode_path_extra(b"notes.txt", b"notes.txt")
    contents = read_artifact(zip_bytes(skill_members() + [Z("notes.txt", b"x", extra=extra)]), "archive", expected_name="evil")
    assert "notes.txt" in contents.files


def test_refuses_evil_zip_data_descriptor_disagreeing():
    members = skill_members() + [Z("a.txt", b"hello", descriptor=True, descriptor_crc=1234)]
    refused(zip_bytes(members), member="a.txt", rule=RULE_ZIP_AGREE)


def test_refuses_zip_bad_crc():
    members = skill_members() + [Z("a.txt", b"hello", crc=zlib.crc32(b"other"))]
    refused(zip_bytes(members), member="a.txt", rule=RULE_ZIP_CRC)


def test_refuses_zip_encrypted_zip64_and_exotic_methods():
    refused(zip_bytes(skill_members() + [Z("a.txt", b"x", flags=0x0801)]), member="a.txt", rule=RULE_ZIP_FEATURES)
    zip64 = b"\x01\x00\x10\x00" + bytes(16)
    refused(zip_bytes(skill_members() + [Z("a.txt", b"x", extra=zip64)]), member="a.txt", rule=RULE_ZIP_FEATURES)
    refused(zip_bytes(skill_members() + [Z("a.bz2", b"x", method=12, compressed=b"BZh")]), member="a.bz2", rule=RULE_ZIP_FEATURES)


def test_refuses_zip_comment_hiding_a_second_end_record():
    inner = zip_bytes(skill_members())
    refused(zip_bytes(skill_members(), comment=inner[inner.index(b"PK\x05\x06"):]), member=None, rule=RULE_ZIP)


def test_refuses_zip_truncated():
    data = zip_bytes(skill_members())
    refused(data[:-30], member=None, rule=RULE_ZIP)


# --- bombs and caps: refused before inflating, or as soon as inflation passes the declaration


def test_refuses_zip_bomb_declaring_less_than_it_inflates_to():
    bomb = Z("bomb.bin", bytes(50 * MiB), usize=100)
    tracemalloc.start()
    try:
        err = refused(zip_bytes(skill_members() + [bomb]), member="bomb.bin", rule=RULE_ZIP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "inflates past" in str(err)
    assert peak < 8 * MiB  # one output chunk, not the 50 MiB


def test_refuses_zip_member_over_file_cap_without_inflating():
    limits = BundleLimits(max_file_size=1024)
    big = Z("big.bin", bytes(2048))
    refused(zip_bytes(skill_members() + [big]), member="big.bin", rule="max_file_size", limits=limits)


def test_refuses_zip_members_over_total_cap():
    limits = BundleLimits(max_total_size=4096)
    members = skill_members() + [Z(f"f{i}.bin", bytes(1500)) for i in range(3)]
    refused(zip_bytes(members), member="f2.bin", rule="max_total_size", limits=limits)


def test_refuses_zip_declaring_more_entries_than_allowed_before_reading_them():
    limits = BundleLimits(max_files=3, max_dirs=2)
    refused(zip_bytes(skill_members(), count=6), member=None, rule="max_files", limits=limits)


def test_refuses_archive_over_the_size_cap():
    limits = BundleLimits(max_bundle_size=100)
    refused(zip_bytes(skill_members() + [Z("pad.bin", os.urandom(200), method=0)]), member=None, rule="max_bundle_size", limits=limits)


# --- layout ---------------------------------------------------------------------------------


def test_refuses_archive_with_a_wrapper_folder_and_says_so():
    err = refused(zip_bytes([Z("evil/SKILL.md", SKILL_MD)]), member="SKILL.md", rule="SKILL.md at the top of the skill folder")
    assert "inside 'evil/'" in str(err) and "archive root" in str(err)


def test_refuses_archive_without_skill_md():
    refused(zip_bytes([Z("README.md", b"x")]), member="SKILL.md", rule="SKILL.md at the top of the skill folder")


def test_refuses_data_that_is_neither_gzip_nor_zip():
    refused(b"<html>404</html>", member=None, rule=RULE_FORMAT)


def test_refuses_tar_global_header_setting_more_than_a_comment():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "x", "uname": "root"}) as tf:
        info = tarfile.TarInfo("SKILL.md")
        info.size = len(SKILL_MD)
        tf.addfile(info, io.BytesIO(SKILL_MD))
    err = refused(gz(buf.getvalue()), member="././@PaxHeader", rule="no global PAX headers")
    assert "uname" in str(err)


def test_refuses_global_header_in_a_skillctl_bundle_even_with_only_a_comment():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "x"}) as tf:
        for m in (tarfile.TarInfo("evil"), tarfile.TarInfo("evil/SKILL.md")):
            m.type, m.size = (tarfile.DIRTYPE, 0) if m.name == "evil" else (tarfile.REGTYPE, len(SKILL_MD))
            tf.addfile(m, io.BytesIO(SKILL_MD) if m.size else None)
    with pytest.raises(BundleRejected) as caught:
        read_bundle(gz(buf.getvalue()))
    assert caught.value.rule == "no global PAX headers"


def test_refuses_skill_md_that_is_not_utf8_or_too_big():
    refused(b"\xff\xfe---\n", member="SKILL.md", rule=RULE_SKILL_MD, kind="skill-md")
    refused(SKILL_MD * 100, member="SKILL.md", rule="max_file_size", kind="skill-md", limits=BundleLimits(max_file_size=200))


def test_zip_modes_executable_only_from_unix_entries():
    members = skill_members() + [Z("run.sh", b"#!/bin/sh\n", mode=0o100755), Z("dos.bat", b"x", mode=None), Z("sub/", mode=0o040755)]
    contents = read_artifact(zip_bytes(members), "archive", expected_name="evil")
    assert contents.executables == {"run.sh"} and contents.dirs == ("sub",)
    assert stat.S_IMODE(0o100755) & 0o111
