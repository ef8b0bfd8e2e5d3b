"""``read_at_most``: the validator's capped read returns what ``read(limit)`` returns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillctl.fsutil import read_at_most


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
