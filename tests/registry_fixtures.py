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
from sandbox_fixtures import skip_marked

_counter = itertools.count()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.path.exists(BINARY):
        skip_marked(items, "requires_registry", f"Debian's docker-registry binary is not installed (apt-get install {APT_PACKAGES})")


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
