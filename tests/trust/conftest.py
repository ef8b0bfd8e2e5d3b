"""Fixtures for the trust tests: each writable registry backend, on fresh storage per test —
the folder registry and Debian's real ``docker-registry`` (distribution 2.8, which has no
referrers API, so signatures live under the ``sha256-<hex>`` tag there)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from skillctl.protocols import Registry
from skillctl.registry import open_registry


@pytest.fixture(params=["folder", pytest.param("oci", marks=pytest.mark.requires_registry)])
def registry_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "folder":
        return str(tmp_path / "registry")
    return request.getfixturevalue("registry_server").url(request.getfixturevalue("ns"))


def open_url(url: str) -> Registry:
    return open_registry(url, insecure=True) if url.startswith("oci://") else open_registry(url, create=True)


@pytest.fixture
def reg(registry_url: str) -> Iterator[Registry]:
    registry = open_url(registry_url)
    try:
        yield registry
    finally:
        registry.close()
