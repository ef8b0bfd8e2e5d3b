"""``read_at_most``: the validator's capped read returns what ``read(limit)`` returns.
``read_regular``: a file the user named is read only when it is a regular file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from skillctl.fsutil import read_at_most, read_regular, read_regular_text


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


def test_read_regular_refuses_what_is_not_a_regular_file_without_waiting(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("héllo")
    assert read_regular_text(tmp_path / "f.txt") == "héllo" and read_regular(tmp_path / "f.txt", 2) == b"h\xc3"
    os.mkfifo(tmp_path / "fifo")  # no writer: a plain open() would wait forever
    for path, kind in ((tmp_path / "fifo", OSError), ("/dev/null", OSError), (tmp_path, IsADirectoryError)):
        with pytest.raises(kind) as exc:
            read_regular(path)
        assert exc.value.errno in (errno.EINVAL, errno.EISDIR) and exc.value.filename == str(path)
