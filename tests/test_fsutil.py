"""``read_at_most``: the validator's capped read returns what ``read(limit)`` returns;
``open_private``: files that may hold request data are their owner's alone; ``read_regular``: a file
the user named is read only when it is a regular file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from skillctl.fsutil import open_private, read_at_most, read_regular, read_regular_text


@pytest.mark.parametrize("size", [0, 1, 9, 10, 11, 4096, 70_000])
def test_a_file_is_read_whole_or_up_to_the_limit(tmp_path, size):
    path = tmp_path / "f"
    path.write_bytes(os.urandom(size))
    for limit in (1, 10, 11, 70_001):
        with open(path, "rb") as fh:
            assert read_at_most(path, limit) == fh.read(limit)


def test_a_file_longer_than_its_size_says_is_read_on_to_the_limit():
    # /proc files report size 0 and hold text
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("no /proc")
    data = read_at_most(status, 1 << 20)
    assert data.startswith(b"Name:") and len(data) > 100
    head = read_at_most(status, 7)
    assert len(head) == 7 and head.startswith(b"Name:")


def test_a_private_file_is_created_0600_in_a_0700_folder_and_an_existing_one_is_narrowed(tmp_path):
    old = os.umask(0)  # the widest umask: the mode must not come from it
    try:
        path = tmp_path / "new" / "log.jsonl"
        with open_private(path) as fh:
            fh.write("one\n")
        assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
        shared = tmp_path / "shared.jsonl"
        shared.write_text("kept\n")
        shared.chmod(0o644)
        with open_private(shared, "a") as fh:
            fh.write("two\n")
        assert shared.stat().st_mode & 0o777 == 0o600 and shared.read_text() == "kept\ntwo\n"
        with open_private(shared, "wb") as fh:
            fh.write(b"new")
        assert shared.read_bytes() == b"new"
    finally:
        os.umask(old)


def test_read_regular_refuses_what_is_not_a_regular_file_without_waiting(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("héllo")
    assert read_regular_text(tmp_path / "f.txt") == "héllo" and read_regular(tmp_path / "f.txt", 2) == b"h\xc3"
    os.mkfifo(tmp_path / "fifo")  # no writer: a plain open() would wait forever
    for path, kind in ((tmp_path / "fifo", OSError), ("/dev/null", OSError), (tmp_path, IsADirectoryError)):
        with pytest.raises(kind) as exc:
            read_regular(path)
        assert exc.value.errno in (errno.EINVAL, errno.EISDIR) and exc.value.filename == str(path)
