"""Reading a registry folder's blob files as hostile: anyone who may write the folder (a team
share) may have put something else there.

A blob is opened without following a symbolic link in its last component and without waiting on
a FIFO (``O_NOFOLLOW | O_NONBLOCK``), checked to be a regular file on the open descriptor (no
race between the check and the read), and read up to a limit plus one byte — so a link to
``/dev/zero``, a FIFO nobody writes to, or a file far larger than its index row says, costs one
``open`` and at most ``limit + 1`` bytes, never a hang or all the memory.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_CHUNK = 1024 * 1024
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class NotRegularFile(OSError):
    """The path is a link, a FIFO, a device, a socket or a directory; ``what`` says which."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(errno.EINVAL, f"{path} is {what}, not a regular file")
        self.what = what


def kind_of(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``path`` (the extra byte tells "longer than expected"
    apart). FileNotFoundError if absent, NotRegularFile unless a regular file, else OSError."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link
            raise NotRegularFile(path, "a symbolic link") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, kind_of(mode))
        parts: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)
