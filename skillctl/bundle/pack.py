"""Packing a skill folder into a reproducible bundle, and writing it to disk atomically."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from skillctl.bundle.canonical import canonical_tar, gzip_bytes, resolve_mtime, sorted_entries
from skillctl.bundle.collect import IGNORE_FILE, BundleFile, collect_files
from skillctl.bundle.digest import format_digest
from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.members import MemberTally, Refused
from skillctl.errors import BundleError

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
    contents: dict[str, tuple[bytes, bool]] = {}
    try:
        tally.add_dir(name)
        for file in files:
            member = f"{name}/{file.path}"
            tally.add_file(member, file.size)
            data = _read_regular(file)
            if len(data) != file.size:  # changed while packing: check the caps on what was read
                raise BundleError(f"{file.source}: changed while packing; pack again once the folder is stable")
            contents[file.path] = (data, file.executable)
        tally.finish()
    except Refused as exc:
        rel = exc.member.partition("/")[2] or exc.member
        raise BundleError(f"{folder}: {rel!r}: {exc.what} (rule: {exc.rule}); rename, shrink or ignore it") from None
    # Folders were tallied as the parents of files; only the files' parents are packed.
    entries = sorted_entries(name, contents)
    tar = canonical_tar(entries, stamp)
    data = gzip_bytes(tar)
    if len(data) > limits.max_bundle_size:
        raise BundleError(
            f"{folder}: the bundle would be {len(data)} bytes compressed, over the limit of "
            f"{limits.max_bundle_size} (rule: max_bundle_size); move large assets out of the skill"
        )
    return PackedBundle(
        name=name,
        data=data,
        digest=format_digest(hashlib.sha256(data).hexdigest()),
        tar_digest=format_digest(hashlib.sha256(tar).hexdigest()),
        size=len(data),
        files=tuple(f.path for f in files),
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
    _fsync_dir(out_dir)
    return target


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # not supported here (e.g. Windows); the rename itself is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
