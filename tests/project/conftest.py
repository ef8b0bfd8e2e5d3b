"""Fixtures for the project layer: a real registry folder with published versions, and a project
folder whose skills.yaml a test writes; ``lock_of`` locks it through the real workflow."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from skillctl.project.lock import Lock
from skillctl.project.workflow import Workspace
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder
from skillctl.sources.registry import Borrowed

from registry.helpers import write_skill

VERSIONS = (("alpha", "1.0.0"), ("alpha", "1.1.0"), ("alpha", "2.0.0"), ("beta", "0.3.0"), ("beta", "0.4.0-rc.1"))


@pytest.fixture
def reg(tmp_path: Path) -> Iterator[LocalRegistry]:
    registry = LocalRegistry(tmp_path / "registry")
    try:
        yield registry
    finally:
        registry.close()


@pytest.fixture
def src(tmp_path: Path) -> Path:
    path = tmp_path / "src"
    path.mkdir()
    return path


def publish(reg: LocalRegistry, src: Path, name: str, version: str) -> Path:
    folder = write_skill(src / f"{name}-{version}", name, version, files={
        "scripts/run.sh": (f"#!/bin/sh\necho {name} {version}\n", 0o755),
        "references/doc.md": f"{name} {version}\n",
    })
    reg.publish(prepare_folder(folder))
    return folder


@pytest.fixture
def published(reg: LocalRegistry, src: Path) -> dict[str, Path]:
    """alpha 1.0.0, 1.1.0, 2.0.0 and beta 0.3.0, 0.4.0-rc.1; the source folders by name@version."""
    return {f"{name}@{version}": publish(reg, src, name, version) for name, version in VERSIONS}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def workspace(project: Path, reg: LocalRegistry) -> Callable[..., Workspace]:
    """A Workspace on ``project`` whose default registry is ``reg`` (given, like --registry)."""

    def make(**kw) -> Workspace:
        kw.setdefault("registry_override", str(reg.root))
        return Workspace(project / "skills.yaml", project / "skills.lock", registry_opener=lambda url: Borrowed(reg), **kw)

    return make


@pytest.fixture
def lock_of(project: Path, workspace) -> Callable[[str], Lock]:
    def lock(text: str | None = None, **kw) -> Lock:
        if text is not None:
            (project / "skills.yaml").write_text(text)
        with workspace() as ws:
            return ws.lock(**kw)[0]

    return lock
