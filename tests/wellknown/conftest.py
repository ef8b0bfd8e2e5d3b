"""Fixtures for well-known sites: a real folder registry with a few skills, the static site
skillctl builds from it, and a real HTTP server on loopback serving that folder.

Every test gets its own HOME, data, cache and working folder, so no cache or registry leaks
between tests or into the user's."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from registry.helpers import write_skill
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder
from skillctl.registry.wellknown import WellKnownRegistry
from skillctl.registry.wellknown.site import build_site

from .server import SiteServer

WK = ".well-known/agent-skills"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / "cache"))
    monkeypatch.setenv("SKILLCTL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(tmp_path / "default-registry"))
    for var in ("SKILLCTL_INSECURE", "SKILLCTL_SITE_TOKEN", "SOURCE_DATE_EPOCH", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NETRC"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def publish(reg: LocalRegistry, root: Path, name: str, version: str, *, files=None, description: str | None = None) -> None:
    kwargs = {"files": files} if files is not None else {}
    if description:
        kwargs["description"] = description
    folder = write_skill(root / f"{name}-{version}", name, version, body=f"# {name} {version}\n", **kwargs)
    reg.publish(prepare_folder(folder))


@pytest.fixture
def source(tmp_path: Path) -> Iterator[LocalRegistry]:
    """tally 1.0.0, 1.1.0, 2.0.0-beta.1 (with a script), and note 0.1.0 (a lone SKILL.md)."""
    reg = LocalRegistry(tmp_path / "source")
    src = tmp_path / "src"
    for version in ("1.0.0", "1.1.0", "2.0.0-beta.1"):
        publish(reg, src, "tally", version)
    publish(reg, src, "note", "0.1.0", files={})
    try:
        yield reg
    finally:
        reg.close()


@pytest.fixture
def site_dir(tmp_path: Path, source: LocalRegistry) -> Path:
    out = tmp_path / "site"
    build_site(out, source)
    return out


@pytest.fixture
def server(site_dir: Path) -> Iterator[SiteServer]:
    with SiteServer(site_dir) as srv:
        yield srv


@pytest.fixture
def open_site():
    """Open a site as a registry, collecting warnings; closed at the end of the test."""
    opened: list[WellKnownRegistry] = []

    def make(url: str, **options) -> WellKnownRegistry:
        options.setdefault("insecure", True)
        reg = WellKnownRegistry.from_url(url, **options)
        opened.append(reg)
        return reg

    yield make
    for reg in opened:
        reg.close()
