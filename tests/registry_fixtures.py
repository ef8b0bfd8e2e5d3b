"""Fixtures for tests that need a real OCI registry: Debian's ``docker-registry`` (distribution
2.8), one anonymous server per session, on a free loopback port with temporary storage.

Registered as a plugin (``tests/conftest.py``) so both the OCI backend's own tests and the
registry conformance suite use the same server. Tests isolate themselves by namespace (``ns``).
``requires_registry`` tests are skipped, with the reason, when the binary is missing — except
on CI, where a missing binary is a setup bug and must fail.
"""

from __future__ import annotations

import itertools
import os
from typing import Iterator

import pytest

from oci.server import APT_PACKAGES, BINARY, DistributionServer

_counter = itertools.count()


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if on_ci() or os.path.exists(BINARY):
        return
    skip = pytest.mark.skip(reason=f"Debian's docker-registry binary is not installed (apt-get install {APT_PACKAGES})")
    for item in items:
        if item.get_closest_marker("requires_registry"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def registry_server(tmp_path_factory) -> Iterator[DistributionServer]:
    server = DistributionServer(tmp_path_factory.mktemp("oci-registry")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def ns() -> str:
    """A namespace no other test uses."""
    return f"t{os.getpid()}n{next(_counter)}"
