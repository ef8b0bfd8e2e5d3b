"""Fixtures for the OCI registry tests: real distribution servers started per session.

The anonymous ``registry_server`` and the per-test namespace ``ns`` come from
``tests/registry_fixtures.py`` (shared with the registry conformance suite); here:
``auth_server`` requires htpasswd basic auth (user ``alice``, password ``wonderland``) and
``token_server`` Bearer tokens.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from sandbox_fixtures import on_ci

from .server import APT_PACKAGES, DistributionServer

USER, PASSWORD = "alice", "wonderland"


def _htpasswd_line(user: str, password: str) -> str:
    """bcrypt line from apache2-utils' htpasswd (distribution accepts bcrypt only)."""
    if shutil.which("htpasswd") is None:
        pytest.fail(f"htpasswd is not installed (apt-get install {APT_PACKAGES})") if on_ci() else pytest.skip(
            f"htpasswd is not installed (apt-get install {APT_PACKAGES})"
        )
    out = subprocess.run(["htpasswd", "-Bbn", user, password], capture_output=True, text=True, check=True)
    return out.stdout.strip() + "\n"


@pytest.fixture(scope="session")
def auth_server(tmp_path_factory) -> Iterator[DistributionServer]:
    root = tmp_path_factory.mktemp("oci-auth-registry")
    htpasswd = root / "htpasswd"
    htpasswd.write_text(_htpasswd_line(USER, PASSWORD), "utf-8")
    server = DistributionServer(root, htpasswd=htpasswd).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def token_server(tmp_path_factory) -> Iterator[tuple[DistributionServer, "TokenService"]]:
    """A registry with Bearer token auth, and its token service (RS256 tokens, real checks)."""
    from .token_service import TokenService

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (it signs the test tokens)")
    root = tmp_path_factory.mktemp("oci-token-registry")
    service = TokenService(root, {USER: PASSWORD})
    server = DistributionServer(root, auth_config=service.registry_config()).start()
    try:
        yield server, service
    finally:
        server.stop()
        service.close()


@pytest.fixture
def oci_url(registry_server: DistributionServer, ns: str) -> str:
    return registry_server.url(ns)


@pytest.fixture
def oci(oci_url: str):
    from skillctl.registry.oci import OciRegistry

    reg = OciRegistry.from_url(oci_url, insecure=True)
    try:
        yield reg
    finally:
        reg.close()


@pytest.fixture(autouse=True)
def _isolated_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the real user's Docker config, registry env or data folders."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    for var in ("DOCKER_CONFIG", "SKILLCTL_REGISTRY", "SKILLCTL_INSECURE", "SKILLCTL_REGISTRY_USERNAME", "SKILLCTL_REGISTRY_PASSWORD",
                "SKILLCTL_REGISTRY_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
