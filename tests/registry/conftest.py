"""Fixtures for registry tests: one real registry folder (SQLite + blobs) per test."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from skillctl.registry.local import LocalRegistry


@pytest.fixture
def reg_path(tmp_path: Path) -> Path:
    return tmp_path / "registry"


@pytest.fixture
def reg(reg_path: Path) -> Iterator[LocalRegistry]:
    registry = LocalRegistry(reg_path)
    try:
        yield registry
    finally:
        registry.close()


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """Where tests write skill folders."""
    path = tmp_path / "src"
    path.mkdir()
    return path
