"""Fixtures for tests that need the real Docker Engine and the agent image.

``requires_docker`` tests are skipped, with the reason, only when no Docker daemon answers and
this is not CI: on CI (``CI`` set) a missing daemon must fail loudly rather than turn the
container tests into silent skips. The agent image is built once per session (and reused
across sessions: the build is skipped when the recipe hash matches).
"""

from __future__ import annotations

import functools
import os
import sys

import pytest


@functools.lru_cache(maxsize=1)
def docker_unavailable_reason() -> str | None:
    """None when a Docker daemon answers a ping, else why not (one line)."""
    from skillctl.errors import SandboxError
    from skillctl.sandbox.client import docker_client

    try:
        docker_client(timeout_s=5).close()
    except SandboxError as exc:
        return str(exc)
    return None


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def skip_marked(items: list[pytest.Item], marker: str, reason: str) -> None:
    """Skip the tests marked ``marker``, with ``reason`` — never on CI, where a missing service is
    a setup bug that must fail loudly rather than turn tests into silent skips."""
    if on_ci():
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker(marker):
            item.add_marker(skip)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if on_ci() or not any(item.get_closest_marker("requires_docker") for item in items):
        return
    reason = docker_unavailable_reason()
    if reason is not None:
        skip_marked(items, "requires_docker", f"no Docker daemon: {reason}")


@pytest.fixture(scope="session")
def docker_client():
    from skillctl.sandbox.client import docker_client as connect

    client = connect()
    yield client
    client.close()


@pytest.fixture(scope="session")
def agent_image(docker_client) -> str:
    """The agent image reference for the current recipe, built if missing (minutes, once)."""
    from skillctl.sandbox.image import ensure_image

    def progress(line: str) -> None:
        if not line.startswith("  "):  # the steps, not every debootstrap/docker build line
            print(f"[agent image] {line}", file=sys.__stderr__, flush=True)

    return ensure_image(progress=progress, client=docker_client)


def containers_of_this_process(docker_client) -> set[str]:
    """Ids of the skillctl containers this test process owns (by the owner label), for checking
    that a run removed what it started."""
    from skillctl.sandbox.reaper import Owner
    from skillctl.sandbox.settings import LABEL_MANAGED, LABEL_OWNER

    found = set()
    for c in docker_client.api.containers(all=True, filters={"label": [f"{LABEL_MANAGED}=1"]}):
        owner = Owner.parse((c.get("Labels") or {}).get(LABEL_OWNER, ""))
        if owner is not None and owner.pid == os.getpid():
            found.add(c["Id"])
    return found
