from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from skillctl.bundle import BundleLimits, BundleRejected, extract_bundle, read_bundle

SKILL_MD = "---\nname: demo\ndescription: Demonstrates packing.\nmetadata:\n  version: 1.0.0\n---\n\n# Demo\n"


def snapshot(folder: Path) -> dict[str, tuple[str, int, int, bytes | str]]:
    """Everything observable about a tree: kind, mode, size and content (or link target)."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = str(path.relative_to(folder))
            if stat.S_ISLNK(st.st_mode):
                result[rel] = ("link", st.st_mode, 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                result[rel] = ("dir", st.st_mode, 0, b"")
            else:
                result[rel] = ("file", st.st_mode, st.st_size, path.read_bytes())
    return result


@pytest.fixture
def make_skill(tmp_path: Path) -> Callable[..., Path]:
    """Write a skill folder from {relative path: bytes | str}; paths ending in '/' are folders."""

    def make(files: dict[str, bytes | str] | None = None, *, where: str = "src/demo", skill_md: bool = True) -> Path:
        root = tmp_path / where
        root.mkdir(parents=True)
        entries = dict(files or {})
        if skill_md:
            entries.setdefault("SKILL.md", SKILL_MD)
        for rel, content in entries.items():
            path = root / rel
            if rel.endswith("/"):
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode() if isinstance(content, str) else content)
        return root

    return make


@pytest.fixture
def assert_refused(tmp_path: Path) -> Callable[..., BundleRejected]:
    """Check a bundle is refused by read_bundle and extract_bundle naming ``member`` and
    ``rule``, in one line, with the destination exactly as before and nothing created."""

    def check(
        data: bytes,
        *,
        member: str | None,
        rule: str,
        expected_name: str | None = None,
        limits: BundleLimits = BundleLimits(),
    ) -> BundleRejected:
        with pytest.raises(BundleRejected) as caught:
            read_bundle(data, expected_name=expected_name, limits=limits, source="evil.skill.tgz")
        err = caught.value
        message = str(err)
        assert "\n" not in message, message
        assert message.startswith("bundle evil.skill.tgz: "), message
        assert err.rule == rule, message
        assert f"(rule: {rule})" in message, message
        assert err.member == member, message
        if member is not None:
            assert f"member {member!r}" in message, message

        dest = tmp_path / "dest"
        dest.mkdir(exist_ok=True)
        (dest / "keep.txt").write_text("kept")
        (dest / "evil").mkdir(exist_ok=True)
        (dest / "evil" / "old.txt").write_text("old")
        before = snapshot(tmp_path)
        with pytest.raises(BundleRejected):
            extract_bundle(data, dest, expected_name=expected_name, limits=limits, overwrite=True)
        with pytest.raises(BundleRejected):
            extract_bundle(data, tmp_path / "fresh", expected_name=expected_name, limits=limits)
        assert snapshot(tmp_path) == before
        return err

    return check
