"""Fixtures for the runtime tests: a real registry folder holding the example skills, one
started Docker sandbox shared by the tests that can share it, and the loopback model server.

The registry is real (SQLite + blobs); the sandbox is the real hardened container on the real
engine; the model server is a real HTTP server the real ``openai`` client talks to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from model_server import model_server  # noqa: F401 - the loopback model server fixture, per test
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_SKILLS = REPO / "skills"
EXAMPLE_NAMES = ("csv-sql", "find-excerpts", "json-shape", "tally")


def publish_folders(reg: LocalRegistry, folders: list[Path]) -> None:
    for folder in folders:
        reg.publish(prepare_folder(folder))


@pytest.fixture(scope="session")
def example_registry_path(tmp_path_factory) -> Path:
    """A registry folder with the repository's example skills published (read-only for tests)."""
    path = tmp_path_factory.mktemp("runtime-registry") / "reg"
    with LocalRegistry(path) as reg:
        publish_folders(reg, [EXAMPLE_SKILLS / n for n in EXAMPLE_NAMES])
    return path


@pytest.fixture
def example_registry(example_registry_path) -> Iterator[LocalRegistry]:
    reg = LocalRegistry(example_registry_path)
    try:
        yield reg
    finally:
        reg.close()


@pytest.fixture(scope="session")
def shared_sandbox(agent_image, docker_client, example_registry_path):
    """One started container with the example skills loaded, for tests that only read /skills
    and write under their own names in /workspace (starting a container costs about a second)."""
    from skillctl.runtime.loader import load_skills
    from skillctl.sandbox.docker_backend import DockerSandbox

    with DockerSandbox(image=agent_image, client=docker_client, kill_after_s=1.0) as sb:
        with LocalRegistry(example_registry_path) as reg:
            sb.loaded = load_skills(list(EXAMPLE_NAMES), reg, sb)
        yield sb


@pytest.fixture
def fresh_sandbox(agent_image, docker_client):
    """A started container of its own, for tests that need an empty /skills."""
    from skillctl.sandbox.docker_backend import DockerSandbox

    with DockerSandbox(image=agent_image, client=docker_client, kill_after_s=1.0) as sb:
        yield sb
