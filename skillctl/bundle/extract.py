"""Unpacking a bundle into a folder: verify everything first, then write, then rename.

Why the verified bytes are written here instead of handing the archive to ``tarfile.extractall``
with ``filter='data'``: ``read_bundle`` has already parsed the archive under stricter rules than
that filter (it has had bypass CVEs), and extracting from the parsed contents means the bytes on
disk are exactly the bytes that were checked: no second parser, no window between checking and
writing. The writer still refuses to follow links (``O_NOFOLLOW``, ``O_EXCL``) and checks every
target stays inside the temporary folder, as defence in depth.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.paths import is_within_directory
from skillctl.bundle.read import BundleContents, read_bundle
from skillctl.errors import BundleError
from skillctl.fsutil import fsync_dir, walk_no_links

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _same_tree(folder: Path, contents: BundleContents) -> bool:
    """True when ``folder`` holds exactly ``contents``: same folders, same files, same bytes,
    same modes, and nothing else (no links, no extra files)."""
    seen_files: set[str] = set()
    seen_dirs: set[str] = set()
    try:
        for rel, st in walk_no_links(folder):
            if stat.S_ISDIR(st.st_mode):
                seen_dirs.add(rel)
            elif stat.S_ISREG(st.st_mode):
                expected = contents.files.get(rel)
                if expected is None or st.st_size != len(expected) or stat.S_IMODE(st.st_mode) != contents.mode(rel):
                    return False
                if (folder / rel).read_bytes() != expected:
                    return False
                seen_files.add(rel)
            else:
                return False
    except OSError:
        return False
    return seen_files == set(contents.files) and seen_dirs == set(contents.dirs)


def _write_tree(root: Path, contents: BundleContents, durable: bool) -> None:
    os.chmod(root, 0o755)  # mkdtemp makes 0700
    for rel in contents.dirs:  # sorted, so a parent comes before its children
        target = root / rel
        if not is_within_directory(root, target):
            raise BundleError(f"{target}: outside the destination; refusing to write it")
        os.mkdir(target, 0o755)
        os.chmod(target, 0o755)  # whatever the umask
    for rel, data in contents.files.items():
        target = root / rel
        if not is_within_directory(root, target):
            raise BundleError(f"{target}: outside the destination; refusing to write it")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, contents.mode(rel))
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    if durable:
        for rel in contents.dirs:
            fsync_dir(root / rel)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def write_contents(contents: BundleContents, dest: Path, *, overwrite: bool = False, durable: bool = True) -> Path:
    """Write verified ``contents`` to ``dest/NAME/`` and return that path.

    Files are 0644 or 0755 and folders 0755 whatever the umask. The tree is written into a
    temporary folder inside ``dest`` and renamed into place, so ``dest/NAME`` is never seen half
    written. An existing ``dest/NAME`` holding exactly these contents is left as is; one holding
    anything else is refused unless ``overwrite`` is true, in which case it is replaced.
    ``dest`` is created if missing.

    ``durable`` fsyncs every file and folder before the rename, so after a crash ``dest/NAME``
    is either absent/old or complete (an install or pull). About 3 ms per file on a plain disk:
    pass False for scratch folders that do not outlive the process.
    """
    dest = Path(dest)
    target = dest / contents.name
    try:
        existing = target.lstat()
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise BundleError(f"{target}: cannot inspect ({exc.strerror}); check the destination") from None
    if existing is not None:
        if stat.S_ISDIR(existing.st_mode) and _same_tree(target, contents):
            return target
        if not overwrite:
            raise BundleError(f"{target}: already exists with other content; remove it, or replace it (skillctl pull/export --force)")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{contents.name}.", suffix=".tmp", dir=dest))
    except OSError as exc:
        raise BundleError(f"{dest}: cannot write there ({exc.strerror}); choose another destination") from None
    old: Path | None = None
    try:
        _write_tree(tmp, contents, durable)
        if durable:
            fsync_dir(tmp)
        if existing is not None:
            old = tmp.with_name(tmp.name + ".old")
            os.rename(target, old)
        os.rename(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not os.path.lexists(target):
            os.rename(old, target)  # put the previous folder back
            old = None
        if isinstance(exc, OSError):
            raise BundleError(f"{target}: cannot write the skill ({exc.strerror}); check the destination") from None
        raise
    if old is not None:
        _remove(old)
    if durable:
        fsync_dir(dest)
    return target


def extract_bundle(
    data: bytes,
    dest: Path,
    *,
    expected_name: str | None = None,
    limits: BundleLimits = BundleLimits(),
    overwrite: bool = False,
    durable: bool = True,
    source: str | None = None,
) -> Path:
    """Verify ``data`` with ``read_bundle`` (nothing is written for a bad bundle: not even
    ``dest``), then write it to ``dest/NAME/`` with :func:`write_contents`. Returns that path."""
    contents = read_bundle(data, expected_name=expected_name, limits=limits, source=source)
    return write_contents(contents, dest, overwrite=overwrite, durable=durable)
