"""Packing: canonical bytes, .skillignore, junk, refusals, atomic writes."""

from __future__ import annotations

import gzip
import io
import os
import random
import shutil
import socket
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from skillctl.bundle import (
    DEFAULT_MTIME,
    BundleLimits,
    collect_files,
    pack,
    read_bundle,
    sha256_digest,
    write_bundle,
)
from skillctl.bundle.canonical import COMPRESSLEVEL, gzip_bytes
from skillctl.errors import BundleError, ConfigError

from .conftest import SKILL_MD

CONTENT = {
    "SKILL.md": SKILL_MD,
    "scripts/run.py": "#!/usr/bin/env python3\nprint('hi')\n",
    "scripts/lib/util.py": "X = 1\n",
    "references/api.md": "# API\n" + "word " * 2000,
    "assets/logo.bin": bytes(range(256)) * 40,
    "notes-ü.txt": "non-ASCII name\n",
    "z/" + "long-name-" * 12 + ".md": "a path over 100 bytes needs a PAX header\n",
}
EXECUTABLE = {"scripts/run.py"}


def _tree(root: Path, order_seed: int, mode_style: int) -> Path:
    """Write CONTENT under ``root`` in a seeded order, with seeded mtimes and permission styles."""
    rng = random.Random(order_seed)
    items = list(CONTENT.items())
    rng.shuffle(items)
    for rel, content in items:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        if rel in EXECUTABLE:
            path.chmod(0o700 if mode_style else 0o755)
        else:
            path.chmod(0o600 if mode_style else 0o664)
        stamp = rng.randint(0, 2_000_000_000)
        os.utime(path, (stamp, stamp))
    for folder in [p for p in root.rglob("*") if p.is_dir()] + [root]:
        folder.chmod(0o700 if mode_style else 0o775)
    return root


def test_same_content_gives_the_same_bytes_from_different_trees(tmp_path):
    old = os.umask(0o077)
    try:
        a = _tree(tmp_path / "one" / "checkout-a", order_seed=1, mode_style=1)
    finally:
        os.umask(0o002)
    try:
        b = _tree(tmp_path / "two" / "other-name", order_seed=2, mode_style=0)
    finally:
        os.umask(old)
    first, second = pack(a, "demo"), pack(b, "demo")
    assert first.data == second.data
    assert first.digest == second.digest == sha256_digest(first.data)
    assert first.tar_digest == second.tar_digest
    assert first.files == tuple(sorted(CONTENT))


def test_packing_twice_on_different_days_gives_the_same_bytes(make_skill, monkeypatch):
    root = make_skill({"a.txt": "a"})
    first = pack(root, "demo")
    monkeypatch.setattr(time, "time", lambda: 4_000_000_000.0)  # as if packed in 2096
    assert pack(root, "demo").data == first.data
    assert first.data[4:8] == b"\0\0\0\0"  # gzip mtime


def test_canonical_entries(make_skill):
    root = make_skill({"scripts/run.sh": "#!/bin/sh\n", "b/c/d.txt": "d"})
    (root / "scripts/run.sh").chmod(0o711)
    (root / "b/c/d.txt").chmod(0o600)
    packed = pack(root, "demo")
    with tarfile.open(fileobj=io.BytesIO(packed.data), mode="r:gz") as tf:
        members = tf.getmembers()
    assert [m.name for m in members] == ["demo", "demo/SKILL.md", "demo/b", "demo/b/c", "demo/b/c/d.txt", "demo/scripts", "demo/scripts/run.sh"]
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members} == {(0, 0, "", "", DEFAULT_MTIME)}
    modes = {m.name: (m.type, m.mode) for m in members}
    assert modes["demo/b"] == (tarfile.DIRTYPE, 0o755)
    assert modes["demo/b/c/d.txt"] == (tarfile.REGTYPE, 0o644)
    assert modes["demo/scripts/run.sh"] == (tarfile.REGTYPE, 0o755)
    assert not any(m.pax_headers for m in members)  # short ASCII names need no PAX header


def test_gzip_layer_is_exactly_gzipfile_without_name_or_time(make_skill):
    packed = pack(make_skill({"x.txt": "x" * 5000}), "demo")
    tar = gzip.decompress(packed.data)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=COMPRESSLEVEL) as gzf:
        gzf.write(tar)
    assert packed.data == buf.getvalue()
    assert packed.tar_digest == sha256_digest(tar)
    assert packed.data[3] == 0  # FLG: no FNAME, no FCOMMENT


def test_source_date_epoch_sets_every_mtime(make_skill, monkeypatch):
    root = make_skill({"a/b.txt": "b"})
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    packed = pack(root, "demo")
    with tarfile.open(fileobj=io.BytesIO(packed.data), mode="r:gz") as tf:
        assert {m.mtime for m in tf.getmembers()} == {1_700_000_000}
    assert pack(root, "demo", mtime=1_700_000_000).data == packed.data
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert pack(root, "demo").data != packed.data


@pytest.mark.parametrize("value", ["yesterday", "-5", "1e9", str(8**11)])
def test_refuses_a_bad_source_date_epoch(make_skill, monkeypatch, value):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    with pytest.raises(ConfigError, match="SOURCE_DATE_EPOCH"):
        pack(make_skill(), "demo")


def test_mtime_argument_out_of_range_is_refused(make_skill):
    with pytest.raises(ConfigError, match="mtime argument"):
        pack(make_skill(), "demo", mtime=-1)


def test_packed_bundle_reads_back_with_the_same_digests(make_skill):
    root = make_skill(CONTENT)
    (root / "scripts/run.py").chmod(0o755)
    packed = pack(root, "demo")
    contents = read_bundle(packed.data, expected_name="demo")
    assert contents.name == "demo"
    assert contents.digest == packed.digest and contents.tar_digest == packed.tar_digest
    assert tuple(contents.files) == packed.files
    assert contents.executables == {"scripts/run.py"}
    assert contents.read_skill_md() == SKILL_MD
    assert sha256_digest(contents.canonical_tar()) == packed.tar_digest


def test_gnu_tar_lists_exactly_the_packed_members(make_skill, tmp_path):
    if shutil.which("tar") is None:
        pytest.skip("no tar binary")
    packed = pack(make_skill(CONTENT), "demo")
    path = write_bundle(packed, tmp_path / "out", "1.0.0")
    listing = subprocess.run(["tar", "-tzf", str(path)], capture_output=True, text=True, check=True).stdout.splitlines()
    dirs = {"demo/"} | {f"demo/{'/'.join(p.split('/')[:i])}/" for p in CONTENT for i in range(1, p.count("/") + 1)}
    assert sorted(listing) == sorted(dirs | {f"demo/{p}" for p in CONTENT})


# --- what goes in -------------------------------------------------------------------------


def test_junk_is_never_packed(make_skill):
    root = make_skill(
        {
            "keep.py": "x",
            ".git/config": "x",
            "sub/__pycache__/m.cpython-311.pyc": "x",
            "sub/m.pyc": "x",
            ".DS_Store": "x",
            "sub/Thumbs.db": "x",
            "._keep.py": "x",
            "notes.txt~": "x",
            ".notes.txt.swp": "x",
            "node_modules/left-pad/index.js": "x",
            ".venv/bin/python": "x",
        }
    )
    assert [f.path for f in collect_files(root)] == ["SKILL.md", "keep.py"]


def test_junk_cannot_be_re_included(make_skill):
    root = make_skill({".skillignore": "!.DS_Store\n!__pycache__/\n", ".DS_Store": "x", "__pycache__/a.pyc": "x"})
    assert [f.path for f in collect_files(root)] == ["SKILL.md"]


def test_skillignore_patterns(make_skill):
    root = make_skill(
        {
            ".skillignore": "# comment\n*.log\n!important.log\nbuild/\n/top-only.txt\ncache/*\n!cache/keep.txt\ndocs/**/draft-*.md\n",
            "a.log": "x",
            "important.log": "x",
            "sub/b.log": "x",
            "build/out.bin": "x",
            "sub/build/out.bin": "x",
            "top-only.txt": "x",
            "sub/top-only.txt": "x",
            "cache/tmp.dat": "x",
            "cache/keep.txt": "x",
            "docs/a/b/draft-1.md": "x",
            "docs/a/final.md": "x",
        }
    )
    assert [f.path for f in collect_files(root)] == [
        "SKILL.md",
        "cache/keep.txt",
        "docs/a/final.md",
        "important.log",
        "sub/top-only.txt",
    ]


def test_a_file_inside_an_ignored_folder_cannot_be_re_included(make_skill):
    # git's rule: "It is not possible to re-include a file if a parent directory is excluded."
    root = make_skill({".skillignore": "build/\n!build/keep.txt\n", "build/keep.txt": "x"})
    assert [f.path for f in collect_files(root)] == ["SKILL.md"]


def test_ignored_links_and_special_files_are_skipped(make_skill):
    root = make_skill({".skillignore": "link\npipe\n"})
    os.symlink("/etc/passwd", root / "link")
    os.mkfifo(root / "pipe")
    assert [f.path for f in collect_files(root)] == ["SKILL.md"]


def test_skillignore_is_not_packed(make_skill):
    root = make_skill({".skillignore": "*.tmp\n", "a.tmp": "x"})
    assert pack(root, "demo").files == ("SKILL.md",)


def test_changing_only_ignored_files_keeps_the_digest(make_skill):
    root = make_skill({".skillignore": "*.tmp\n"})
    before = pack(root, "demo").digest
    (root / "scratch.tmp").write_text("changes every run")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert pack(root, "demo").digest == before


# --- refusals -----------------------------------------------------------------------------


def test_refuses_a_symlink_in_the_folder(make_skill):
    root = make_skill()
    os.symlink("/etc/passwd", root / "passwd")
    with pytest.raises(BundleError, match=r"passwd: a symbolic link; a bundle holds only regular files"):
        pack(root, "demo")


def test_refuses_a_symlinked_folder(make_skill, tmp_path):
    root = make_skill()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", root / "more")
    with pytest.raises(BundleError, match="more: a symbolic link"):
        collect_files(root)


def test_refuses_a_fifo(make_skill):
    root = make_skill()
    os.mkfifo(root / "pipe")
    with pytest.raises(BundleError, match="pipe: a FIFO"):
        pack(root, "demo")


def test_refuses_a_socket(make_skill):
    root = make_skill()
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "s"))
        with pytest.raises(BundleError, match="s: a socket"):
            pack(root, "demo")
    finally:
        sock.close()


def test_refuses_a_device(make_skill):
    root = make_skill()
    try:
        os.mknod(root / "null", 0o600 | 0o020000, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("cannot create device nodes here (needs CAP_MKNOD)")
    with pytest.raises(BundleError, match="null: a character device"):
        pack(root, "demo")


def test_refuses_a_folder_without_skill_md(make_skill):
    root = make_skill({"README.md": "x"}, skill_md=False)
    with pytest.raises(BundleError, match=r"'SKILL.md': missing; a bundle holds one skill"):
        pack(root, "demo")


def test_refuses_names_that_collide_on_case_insensitive_file_systems(make_skill):
    root = make_skill({"Notes.md": "a", "notes.md": "b"})
    with pytest.raises(BundleError, match=r"collides with .*rule: no paths that differ only in case"):
        pack(root, "demo")


@pytest.mark.parametrize(
    ("name", "rule"),
    [("back\\slash.txt", "no backslashes"), ("a:b.txt", "no ':'"), ("new\nline.txt", "no NUL or control characters")],
)
def test_refuses_file_names_a_bundle_cannot_carry(make_skill, name, rule):
    root = make_skill({name: "x"})
    with pytest.raises(BundleError, match=f"rule: {rule}"):
        pack(root, "demo")


def test_refuses_a_file_name_that_is_not_utf8(make_skill):
    root = make_skill()
    with open(os.path.join(os.fsencode(root), b"bad-\xff.txt"), "wb"):
        pass
    with pytest.raises(BundleError, match="rule: UTF-8 paths"):
        pack(root, "demo")


def test_refuses_a_name_with_a_slash(make_skill):
    with pytest.raises(BundleError, match="contains '/'"):
        pack(make_skill(), "a/b")


@pytest.mark.parametrize(
    ("limits", "files", "rule"),
    [
        (BundleLimits(max_files=2), {"a": "1", "b": "2"}, "max_files"),
        (BundleLimits(max_file_size=10), {"a": "x" * 11}, "max_file_size"),
        (BundleLimits(max_total_size=150), {"a": "x" * 60, "b": "y" * 60}, "max_total_size"),
        (BundleLimits(max_dirs=2), {"a/b/c.txt": "x"}, "max_dirs"),
        (BundleLimits(max_depth=2), {"a/b/c.txt": "x"}, "max_depth"),
        (BundleLimits(max_path_length=20), {"a" * 20: "x"}, "max_path_length"),
    ],
)
def test_pack_enforces_the_limits_reading_enforces(make_skill, limits, files, rule):
    with pytest.raises(BundleError, match=f"rule: {rule}"):
        pack(make_skill(files), "demo", limits=limits)


def test_refuses_a_bundle_over_the_compressed_cap(make_skill):
    root = make_skill({"noise.bin": random.Random(0).randbytes(4096)})
    with pytest.raises(BundleError, match="rule: max_bundle_size"):
        pack(root, "demo", limits=BundleLimits(max_bundle_size=4096))


@pytest.mark.parametrize("field", ["max_files", "max_file_size", "max_header_size"])
@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_limits_must_be_positive_integers(field, value):
    with pytest.raises(ConfigError, match=field):
        BundleLimits(**{field: value})


# --- writing ------------------------------------------------------------------------------


def test_write_bundle_names_the_file_and_leaves_no_temp(make_skill, tmp_path):
    packed = pack(make_skill(), "demo")
    out = tmp_path / "dist" / "nested"
    old = os.umask(0o077)
    try:
        path = write_bundle(packed, out, "1.2.0-rc.1")
    finally:
        os.umask(old)
    assert path == out / "demo-1.2.0-rc.1.skill.tgz"
    assert path.read_bytes() == packed.data
    assert path.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in out.iterdir()) == [path.name]


def test_write_bundle_replaces_an_older_file_whole(make_skill, tmp_path):
    root = make_skill()
    first = write_bundle(pack(root, "demo"), tmp_path, "1.0.0")
    (root / "more.txt").write_text("more")
    second = write_bundle(pack(root, "demo"), tmp_path, "1.0.0")
    assert first == second
    assert read_bundle(second.read_bytes()).files.keys() == {"SKILL.md", "more.txt"}


@pytest.mark.parametrize("version", ["", "../1.0.0", "1.0.0/x", ".hidden", "1:0", " 1.0.0"])
def test_write_bundle_refuses_versions_unsafe_in_a_file_name(make_skill, tmp_path, version):
    with pytest.raises(BundleError, match="cannot be part of a file name"):
        write_bundle(pack(make_skill(), "demo"), tmp_path, version)
    assert list(tmp_path.iterdir()) == [tmp_path / "src"]


# --- the pipelined writer -----------------------------------------------------------------


def test_pipelined_tar_gz_equals_one_shot_compression():
    from skillctl.bundle.canonical import Entry, canonical_tar, gzip_bytes, tar_gz

    rng = random.Random(5)
    entries = [Entry("t", None)] + [
        Entry(f"t/f{i:03}", rng.randbytes(rng.randint(0, 300_000)) if i % 3 else b"text " * rng.randint(0, 90_000))
        for i in range(40)
    ]
    result = tar_gz(iter(entries), 0)
    tar = canonical_tar(entries, 0)
    assert result.data == gzip_bytes(tar)
    assert (result.tar_digest, result.digest) == (sha256_digest(tar)[7:], sha256_digest(result.data)[7:])


def test_a_failure_while_producing_the_tar_propagates_and_stops_the_worker():
    import threading

    from skillctl.bundle.canonical import Entry, tar_gz

    def entries():
        for i in range(50):
            yield Entry(f"t/f{i}", bytes(200_000))
        raise BundleError("t/f50: changed while packing")

    before = threading.active_count()
    with pytest.raises(BundleError, match="changed while packing"):
        tar_gz(entries(), 0)
    assert threading.active_count() == before
