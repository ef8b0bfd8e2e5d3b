"""Reading and extracting well-formed bundles, including ones made by other tools."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from skillctl.bundle import (
    BundleLimits,
    extract_bundle,
    pack,
    read_bundle,
    read_bundle_file,
    write_contents,
)

from skillctl.errors import BundleError

from .archives import SKILL_MD, M, gz, tar_bytes, tgz
from .conftest import snapshot

needs_tar = pytest.mark.skipif(shutil.which("tar") is None, reason="needs GNU tar")


@needs_tar
@pytest.mark.parametrize("fmt", ["gnu", "oldgnu", "ustar", "posix", "v7"])
def test_reads_bundles_made_by_gnu_tar(make_skill, tmp_path, fmt):
    long_dir = "d" * 60 + "/" + "e" * 60
    root = make_skill({f"{long_dir}/file.txt": "deep", "ünï.txt": "u", "run.sh": "#!/bin/sh\n"}, where="src/demo")
    (root / "run.sh").chmod(0o755)
    out = tmp_path / f"{fmt}.tgz"
    result = subprocess.run(["tar", f"--format={fmt}", "-czf", str(out), "-C", str(root.parent), "demo"], capture_output=True)
    if fmt == "v7":
        # v7 has no magic; our reader refuses it (no ustar magic to validate the header against).
        with pytest.raises(BundleError, match="not a ustar/PAX/GNU tar header"):
            read_bundle(out.read_bytes())
        return
    assert result.returncode == 0, result.stderr
    contents = read_bundle(out.read_bytes(), expected_name="demo")
    assert set(contents.files) == {"SKILL.md", f"{long_dir}/file.txt", "ünï.txt", "run.sh"}
    assert contents.files[f"{long_dir}/file.txt"] == b"deep"
    assert contents.executables == {"run.sh"}


def test_reads_python_tarfile_gnu_and_ustar_formats():
    for fmt in (tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT, tarfile.PAX_FORMAT):
        long = "d" * 60 + "/" + "x" * 60
        contents = read_bundle(tgz(M("evil/" + long, b"long"), fmt=fmt))
        assert contents.files[long] == b"long"


def test_folders_may_be_implicit_or_empty():
    data = gz(tar_bytes([M("evil/SKILL.md", SKILL_MD), M("evil/a/b/c.txt", b"c"), M("evil/empty", type=tarfile.DIRTYPE)]))
    contents = read_bundle(data)
    assert contents.name == "evil"
    assert contents.dirs == ("a", "a/b", "empty")


def test_read_bundle_file_refuses_a_file_over_the_cap_before_reading_it(tmp_path):
    path = tmp_path / "big.skill.tgz"
    path.write_bytes(tgz() + b"\0" * 100)
    with pytest.raises(BundleError, match="rule: max_bundle_size"):
        read_bundle_file(path, limits=BundleLimits(max_bundle_size=len(tgz())))


def test_read_bundle_file_refuses_a_fifo_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.skill.tgz")
    with pytest.raises(BundleError, match="not a regular file"):
        read_bundle_file(tmp_path / "pipe.skill.tgz")


def test_read_bundle_file_names_the_file(tmp_path):
    path = tmp_path / "x.skill.tgz"
    path.write_bytes(b"not a bundle")
    with pytest.raises(BundleError, match=f"bundle {path}: not gzip data"):
        read_bundle_file(path)
    with pytest.raises(BundleError, match="cannot read the bundle"):
        read_bundle_file(tmp_path / "missing.skill.tgz")


def test_default_label_is_the_digest_prefix():
    data = b"nope"
    with pytest.raises(BundleError, match=r"^bundle sha256:[0-9a-f]{12}: not gzip data"):
        read_bundle(data)


def test_skill_md_that_is_not_utf8_is_reported():
    contents = read_bundle(gz(tar_bytes([M("evil", type=tarfile.DIRTYPE), M("evil/SKILL.md", b"\xff\xfe")])))
    with pytest.raises(BundleError, match="SKILL.md is not UTF-8"):
        contents.read_skill_md()


# --- extraction ---------------------------------------------------------------------------


@pytest.mark.parametrize("durable", [True, False])
def test_extract_writes_normalised_modes_whatever_the_umask(make_skill, tmp_path, durable):
    root = make_skill({"bin/tool": "#!/bin/sh\n", "data/a.txt": "a"})
    (root / "bin/tool").chmod(0o700)
    packed = pack(root, "demo")
    old = os.umask(0o077)
    try:
        target = extract_bundle(packed.data, tmp_path / "skills", expected_name="demo", durable=durable)
    finally:
        os.umask(old)
    assert target == tmp_path / "skills" / "demo"
    modes = {str(p.relative_to(target)): p.stat().st_mode & 0o777 for p in [target, *target.rglob("*")]}
    assert modes == {".": 0o755, "SKILL.md": 0o644, "bin": 0o755, "bin/tool": 0o755, "data": 0o755, "data/a.txt": 0o644}
    assert (target / "data/a.txt").read_text() == "a"
    assert sorted(os.listdir(tmp_path / "skills")) == ["demo"]  # no temp folder left behind


def test_extracting_identical_contents_again_is_a_no_op(make_skill, tmp_path):
    packed = pack(make_skill({"a.txt": "a"}), "demo")
    target = extract_bundle(packed.data, tmp_path / "out")
    inode = target.stat().st_ino
    assert extract_bundle(packed.data, tmp_path / "out") == target
    assert target.stat().st_ino == inode


def test_extract_refuses_to_replace_other_content_unless_asked(make_skill, tmp_path):
    root = make_skill({"a.txt": "a"})
    extract_bundle(pack(root, "demo").data, tmp_path / "out")
    (root / "a.txt").write_text("changed")
    newer = pack(root, "demo").data
    before = snapshot(tmp_path / "out")
    with pytest.raises(BundleError, match="already exists with other content"):
        extract_bundle(newer, tmp_path / "out")
    assert snapshot(tmp_path / "out") == before
    target = extract_bundle(newer, tmp_path / "out", overwrite=True)
    assert (target / "a.txt").read_text() == "changed"
    assert sorted(os.listdir(tmp_path / "out")) == ["demo"]


@pytest.mark.parametrize("change", ["extra file", "mode", "symlink", "content"])
def test_a_modified_existing_folder_is_not_identical(make_skill, tmp_path, change):
    packed = pack(make_skill({"a.txt": "a"}), "demo")
    target = extract_bundle(packed.data, tmp_path / "out")
    if change == "extra file":
        (target / "b.txt").write_text("b")
    elif change == "mode":
        (target / "a.txt").chmod(0o755)
    elif change == "symlink":
        (target / "a.txt").unlink()
        os.symlink("/etc/hostname", target / "a.txt")
    else:
        (target / "a.txt").write_text("b")
    with pytest.raises(BundleError, match="already exists"):
        extract_bundle(packed.data, tmp_path / "out")
    assert extract_bundle(packed.data, tmp_path / "out", overwrite=True) == target
    assert (target / "a.txt").read_text() == "a" and not (target / "a.txt").is_symlink()


def test_overwrite_replaces_a_symlink_without_following_it(make_skill, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("keep")
    (tmp_path / "out").mkdir()
    os.symlink(elsewhere, tmp_path / "out" / "demo")
    packed = pack(make_skill(), "demo")
    with pytest.raises(BundleError, match="already exists"):
        extract_bundle(packed.data, tmp_path / "out")
    target = extract_bundle(packed.data, tmp_path / "out", overwrite=True)
    assert not target.is_symlink() and (target / "SKILL.md").is_file()
    assert (elsewhere / "precious.txt").read_text() == "keep"


def test_write_contents_reports_a_destination_it_cannot_use(make_skill, tmp_path):
    contents = read_bundle(pack(make_skill({"a.txt": "a"}), "demo").data)
    dest = tmp_path / "not-a-folder"
    dest.write_text("a file where the destination folder should be")
    with pytest.raises(BundleError, match=r"not-a-folder/demo: cannot inspect \(Not a directory\)"):
        write_contents(contents, dest)
    assert dest.read_text() == "a file where the destination folder should be"


def test_canonical_tar_of_a_foreign_bundle_is_canonical():
    foreign = gz(tar_bytes([M("evil/SKILL.md", SKILL_MD, mode=0o600), M("evil/x/run", b"r", mode=0o700)]))
    contents = read_bundle(foreign)
    again = read_bundle(gz(contents.canonical_tar()))
    assert dict(again.files) == dict(contents.files) and again.executables == {"x/run"}
    assert again.dirs == contents.dirs == ("x",)
