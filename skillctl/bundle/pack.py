"""Packing a skill folder into a reproducible bundle, and writing it to disk atomically."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillctl.bundle.canonical import Entry, layout, resolve_mtime, sorted_entries, tar_gz
from skillctl.bundle.collect import IGNORE_FILE, BundleFile, collect_files
from skillctl.bundle.digest import format_digest
from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.members import MemberTally, Refused
from skillctl.errors import BundleError
from skillctl.fsutil import fsync_dir

if TYPE_CHECKING:
    from skillctl.bundle.read import BundleContents

BUNDLE_SUFFIX = ".skill.tgz"


@dataclass(frozen=True)
class PackedBundle:
    """A bundle built in memory.

    ``data`` is the .tgz; ``digest`` is ``sha256:`` of ``data``; ``tar_digest`` is ``sha256:``
    of the uncompressed tar (stable even where another zlib build compresses differently);
    ``files`` are the packed paths relative to the top folder ``name``, sorted.
    """

    name: str
    data: bytes
    digest: str
    tar_digest: str
    size: int
    files: tuple[str, ...]


def _read_regular(file: BundleFile) -> bytes:
    """The file's bytes, refusing one swapped for a link or special file since it was listed."""
    try:
        fd = os.open(file.source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise BundleError(f"{file.source}: cannot read ({exc.strerror}); fix its permissions or ignore it") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BundleError(f"{file.source}: no longer a regular file; pack again once the folder is stable")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def pack(folder: Path, name: str, *, mtime: int | None = None, limits: BundleLimits = BundleLimits()) -> PackedBundle:
    """Build the canonical bundle of ``folder`` with top folder ``name``, in memory.

    The bytes depend only on the packed files' paths, contents and execute bits, on ``name`` and
    on the mtime (argument, else ``SOURCE_DATE_EPOCH``, else 1980-01-01): not on file mtimes,
    owners, umask, creation order or the folder's own name. Raises BundleError when a file
    breaks a path rule or a limit (the same rules ``read_bundle`` applies), when ``SKILL.md`` is
    missing, or for links and special files (see ``collect_files``); ConfigError for a bad mtime.
    """
    folder = Path(folder)
    stamp = resolve_mtime(mtime)
    if "/" in name:
        raise BundleError(f"bundle name {name!r} contains '/'; use the skill's name")
    files = collect_files(folder, ignore_file=IGNORE_FILE)
    tally = MemberTally(limits, expected_name=name)
    try:
        tally.add_dir(name)
        for file in files:
            tally.add_file(f"{name}/{file.path}", file.size)  # folders are tallied as parents
        tally.finish()
    except Refused as exc:
        rel = exc.member.partition("/")[2] if exc.member else ""
        raise BundleError(f"{folder}: {rel or exc.member!r}: {exc.what} (rule: {exc.rule}); rename, shrink or ignore it") from None
    by_path = {file.path: file for file in files}

    def entries() -> Iterator[Entry]:
        # Files are read as the tar is written, so reading overlaps compression.
        for member, rel in layout(name, by_path):
            if rel is None:
                yield Entry(member, None)
                continue
            file = by_path[rel]
            data = _read_regular(file)
            if len(data) != file.size:  # the caps were checked on the size listed
                raise BundleError(f"{file.source}: changed while packing; pack again once the folder is stable")
            yield Entry(member, data, file.executable)

    packed = tar_gz(entries(), stamp)
    if len(packed.data) > limits.max_bundle_size:
        raise BundleError(
            f"{folder}: the bundle would be {len(packed.data)} bytes compressed, over the limit of "
            f"{limits.max_bundle_size} (rule: max_bundle_size); move large assets out of the skill"
        )
    return PackedBundle(
        name=name,
        data=packed.data,
        digest=format_digest(packed.digest),
        tar_digest=format_digest(packed.tar_digest),
        size=len(packed.data),
        files=tuple(f.path for f in files),
    )


def repack(contents: "BundleContents", *, mtime: int | None = None) -> PackedBundle:
    """The bundle ``pack`` would make of ``contents`` (already verified, e.g. read from a
    well-known archive): same canonical layout, so the same files give the same bytes."""
    files = {rel: (data, rel in contents.executables) for rel, data in contents.files.items()}
    packed = tar_gz(sorted_entries(contents.name, files, contents.dirs), resolve_mtime(mtime))
    return PackedBundle(
        name=contents.name,
        data=packed.data,
        digest=format_digest(packed.digest),
        tar_digest=format_digest(packed.tar_digest),
        size=len(packed.data),
        files=tuple(sorted(contents.files)),
    )


def bundle_filename(name: str, version: str) -> str:
    """``{name}-{version}.skill.tgz``; refuses a version that is not safe in a file name."""
    if not version or version.startswith(".") or any(c in version for c in "/\\\0:") or version != version.strip():
        raise BundleError(f"version {version!r} cannot be part of a file name; use a SemVer version like 1.2.3")
    return f"{name}-{version}{BUNDLE_SUFFIX}"


def write_bundle(packed: PackedBundle, out_dir: Path, version: str) -> Path:
    """Write ``packed`` to ``out_dir/{name}-{version}.skill.tgz`` atomically and return the path.

    Temp file in the same folder, fsync, rename, fsync of the folder: a reader sees the old file
    or the whole new one, never a torn one, even across a crash. ``out_dir`` is created if
    missing; an existing file of that name is replaced. The file is 0644 whatever the umask.
    """
    out_dir = Path(out_dir)
    target = out_dir / bundle_filename(packed.name, version)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise BundleError(f"{out_dir}: cannot write the bundle there ({exc.strerror}); choose another -o folder") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(packed.data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o644)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise BundleError(f"{target}: cannot write the bundle ({exc.strerror}); choose another -o folder") from None
        raise
    fsync_dir(out_dir)
    return target
