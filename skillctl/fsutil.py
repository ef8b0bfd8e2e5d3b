"""File-system helpers: durability for the bundle writer, the extractor and the registry; capped
reads for the validator; files only their owner may read; reads of the files a user names that
cannot hang on a FIFO."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterator


def lstat_is(path: Path, test: Callable[[int], bool]) -> bool:
    """``test`` (``stat.S_ISREG``, ``S_ISDIR``…) on what ``path`` itself is — a link is not
    followed —, False when it cannot be looked at."""
    try:
        return test(path.lstat().st_mode)
    except OSError:
        return False


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in ``path`` durable. Best effort: some platforms (Windows)
    cannot open folders; there the rename itself is still atomic."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def walk_no_links(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry below ``folder`` as (path relative to it with ``/``, its ``lstat``), a folder
    before what it holds; links are reported, never followed. OSError when a folder cannot be
    listed (the caller decides what that means)."""
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        with os.scandir(folder / rel_dir if rel_dir else folder) as it:
            entries = list(it)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            st = entry.stat(follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False):
                pending.append(rel)
            yield rel, st


def open_private(path: Path, mode: str = "w") -> IO[Any]:
    """``open(path, mode)`` for a file that may hold request data or secrets' surroundings
    (transcripts, egress logs): created 0600 — never readable by others for a moment — and
    narrowed to 0600 if it already existed (``O_CREAT`` keeps an existing file's mode). Its
    folder, when created here, is 0700. ``mode`` is ``w``/``a``, text or binary."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
        return open(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"}))
    except BaseException:
        os.close(fd)
        raise


def read_at_most(path: str | os.PathLike[str], limit: int) -> bytes:
    """What ``open(path, "rb").read(limit)`` returns: the file, or its first ``limit`` bytes.

    A read of ``limit`` bytes allocates them up front; for a cap of a few MiB that costs more than
    reading a small file, and the validator reads thousands. The read is sized by the file
    instead, and goes on to the cap if the file turns out longer than it said."""
    with open(path, "rb") as fh:
        first = min(limit, os.fstat(fh.fileno()).st_size + 1)
        data = fh.read(first)
        if len(data) == first < limit:
            data += fh.read(limit - first)
        return data


def read_regular(path: str | os.PathLike[str], limit: int = -1) -> bytes:
    """The bytes of the regular file ``path`` (a file the user named: a policy, a tasks file,
    skills.yaml), at most ``limit`` of them. A FIFO, device or socket there is an ``OSError`` at
    once instead of an open() that waits forever for a writer; a folder is ``IsADirectoryError``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", os.fspath(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "is not a regular file (a FIFO, device or socket)", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit)


def read_regular_text(path: str | os.PathLike[str]) -> str:
    """``read_regular`` as UTF-8 text (``UnicodeDecodeError`` for other bytes)."""
    return read_regular(path).decode("utf-8")


def tar_data_filter() -> dict[str, str]:
    """Keyword arguments that put ``tarfile``'s ``'data'`` extraction filter on top of our own
    member checks, where this Python has it.

    The filter arrived in 3.11.4 (PEP 706); Debian 12's ``python3`` is 3.11.2 and lacks it, and
    passing ``filter=`` there is a ``TypeError``. Every caller checks each member itself first
    (the filter has had bypasses and is never the only guard), so without it nothing is lost
    but the second layer.
    """
    import tarfile

    return {"filter": "data"} if hasattr(tarfile, "data_filter") else {}


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (a temporary file beside it, fsynced, renamed),
    with the mode a new file would get: a project file (skills.lock, skills.yaml, a pylock) is
    the project's, readable as the umask allows."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            umask = os.umask(0)  # mkstemp makes 0600; honour the umask as open() does
            os.umask(umask)
            os.fchmod(fh.fileno(), 0o666 & ~umask)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
