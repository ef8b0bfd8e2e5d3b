"""Property tests: whatever the input, the reader answers with contents or a BundleError.

When it answers with contents, those contents are what ``tarfile`` also sees in the same tar
(no parser differential), and extracting them writes only inside the destination.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
import zlib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillctl.bundle import BundleLimits, extract_bundle, read_bundle
from skillctl.bundle.read import BundleContents
from skillctl.errors import BundleError

from .archives import SKILL_MD, M, gz, tar_bytes

# SKILLCTL_HYPOTHESIS_EXAMPLES raises the count for a deeper hunt (e.g. 5000) outside CI.
SETTINGS = settings(
    max_examples=int(os.environ.get("SKILLCTL_HYPOTHESIS_EXAMPLES", "150")),
    deadline=None,
    database=None,  # no .hypothesis folder in the tree
    suppress_health_check=[HealthCheck.too_slow],
)
SMALL = BundleLimits(max_files=20, max_dirs=20, max_file_size=4096, max_total_size=16384, max_header_size=2048)

VALID_TAR = tar_bytes(
    [
        M("skill", type=tarfile.DIRTYPE, mode=0o755),
        M("skill/SKILL.md", SKILL_MD),
        M("skill/scripts", type=tarfile.DIRTYPE, mode=0o755),
        M("skill/scripts/run.py", b"print('hi')\n" * 20, mode=0o755),
        M("skill/" + "n" * 110 + ".md", b"long name\n", pax={"comment": "c"}),
    ]
)
VALID = gz(VALID_TAR)


def _read(data: bytes) -> BundleContents | None:
    """Contents, or None for a BundleError; anything else propagates and fails the test."""
    try:
        return read_bundle(data, limits=SMALL)
    except BundleError as exc:
        assert "\n" not in str(exc)
        return None


def _tarfile_view(tar: bytes) -> tuple[dict[str, bytes], set[str], set[str]]:
    files: dict[str, bytes] = {}
    dirs: set[str] = set()
    execs: set[str] = set()
    with tarfile.open(fileobj=io.BytesIO(tar), mode="r:") as tf:
        for member in tf:
            assert member.isreg() or member.isdir(), f"tarfile sees a {member.type!r} we accepted"
            if member.isdir():
                dirs.add(member.name)
            else:
                extracted = tf.extractfile(member)
                assert extracted is not None
                files[member.name] = extracted.read()
                if member.mode & 0o111:
                    execs.add(member.name)
    return files, dirs, execs


def _agrees_with_tarfile(contents: BundleContents, tar: bytes) -> None:
    files, dirs, execs = _tarfile_view(tar)
    top = contents.name
    assert files == {f"{top}/{p}": d for p, d in contents.files.items()}
    assert execs == {f"{top}/{p}" for p in contents.executables}
    assert dirs <= {top} | {f"{top}/{d}" for d in contents.dirs}


def _extracts_inside(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "dest"
        target = extract_bundle(data, dest, limits=SMALL)
        assert target.parent == dest
        for dirpath, dirnames, filenames in os.walk(tmp):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                assert not path.is_symlink()
                assert path == dest or dest in path.parents


@SETTINGS
@given(st.binary(max_size=2048))
def test_random_bytes_only_raise_bundle_error(data):
    assert _read(data) is None


@SETTINGS
@given(st.binary(max_size=2048))
def test_random_bytes_behind_a_gzip_header_only_raise_bundle_error(data):
    assert _read(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + data) is None


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_corrupted_bundle_bytes_only_raise_bundle_error(edits):
    data = bytearray(VALID)
    for pos, value in edits:
        data[pos] = value
    contents = _read(bytes(data))
    if contents is not None:  # only possible when the edits changed nothing that matters
        _agrees_with_tarfile(contents, gzip.decompress(bytes(data)))


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(0, len(VALID_TAR) - 1), st.integers(0, 255)), min_size=1, max_size=6),
    st.integers(0, len(VALID_TAR)),
)
def test_mutated_tars_are_refused_or_read_as_tarfile_reads_them(edits, cut):
    tar = bytearray(VALID_TAR)
    for pos, value in edits:
        tar[pos] = value
    mutated = bytes(tar[:cut]) if cut % 7 == 0 else bytes(tar)
    data = gz(mutated)
    contents = _read(data)
    if contents is not None:
        _agrees_with_tarfile(contents, mutated)
        _extracts_inside(data)


_NAME_PARTS = st.sampled_from(["skill", "a", "A", "..", ".", "", "b\\c", "C:", "x:y", "\n", "é", "e\u0301", "SKILL.md", "skill.md"])
_SAFE_NAMES = st.lists(st.sampled_from(["a", "b", "scripts", "x.py", "README.md"]), min_size=1, max_size=3).map(
    lambda parts: "skill/" + "/".join(parts)
)
_NAMES = _SAFE_NAMES | st.lists(_NAME_PARTS, min_size=1, max_size=5).map("/".join) | st.sampled_from(["/etc/passwd", "/", "skill/"])
_TYPES = st.sampled_from([tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.CONTTYPE])
_PAX = st.dictionaries(st.sampled_from(["path", "linkpath", "size", "comment", "mtime", "GNU.sparse.name", "uid"]), st.sampled_from(["skill/x", "../x", "5", "", "1.5", "skill/SKILL.md"]), max_size=2)


@SETTINGS
@given(
    st.lists(st.tuples(_NAMES, _TYPES, st.binary(max_size=64), _PAX, st.sampled_from([0o644, 0o755, 0o4755])), max_size=6),
    st.sampled_from([tarfile.PAX_FORMAT, tarfile.GNU_FORMAT]),
)
def test_crafted_member_lists_are_refused_or_safe(members, fmt):
    entries = [M("skill", type=tarfile.DIRTYPE), M("skill/SKILL.md", SKILL_MD)]
    for name, type_, data, pax, mode in members:
        entries.append(M(name, data if type_ in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE) else b"", type=type_, pax=pax, mode=mode, linkname="skill/SKILL.md"))
    try:
        tar = tar_bytes(entries, fmt)
    except (ValueError, tarfile.HeaderError, UnicodeError):
        return  # tarfile cannot write it; nothing to test
    data = gz(tar)
    contents = _read(data)
    if contents is not None:
        for path in contents.files:
            parts = path.split("/")
            assert ".." not in parts and "" not in parts and not path.startswith("/") and "\\" not in path
        assert all(mode in (0o644, 0o755) for mode in map(contents.mode, contents.files))
        _agrees_with_tarfile(contents, tar)
        _extracts_inside(data)


def test_the_valid_fixture_is_valid():
    # Guards the properties above: if VALID stopped being readable they would pass vacuously.
    contents = read_bundle(VALID, limits=SMALL)
    assert set(contents.files) == {"SKILL.md", "scripts/run.py", "n" * 110 + ".md"}
    assert zlib.crc32(VALID_TAR) != 0
