"""Fixtures for the egress tests: a test CA, HTTPS and HTTP upstreams on loopback, the policy
and ``--egress-resolve`` mappings that point the reserved test names at them, and a proxy
process started directly on 127.0.0.1 (for the tests that need no container).

The guard set in ``tests/conftest.py`` (loopback only, no DNS) holds for every proxy started
here; every allowed name below is mapped, so nothing is ever looked up or dialled elsewhere.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
from pathlib import Path
from typing import Any, Iterator

import pytest

from skillctl.egress.policy import parse_policy
from skillctl.egress.process import ProxyProcess, proxy_config
from skillctl.egress.rules import make_placeholder
from .upstream import Upstream, make_test_ca

SECRET = "real-" + secrets.token_hex(16)  # the host-side value of MY_TOKEN; must never be seen inside
POLICY = {
    "type": "allowlist",
    "allowed_domains": ["*.example.test", "other.test", "10.1.2.3", "169.254.169.254", "127.0.0.1", "guarded.test"],
    "domain_secrets": [{"domain": "api.example.test", "name": "MY_TOKEN", "value": "env:MY_TOKEN"}],
    # Spliced, not intercepted (see test_passthrough.py); no other test uses this name.
    "passthrough_domains": ["dl.example.test"],
}
HTTPS_HOSTS = ("api.example.test", "files.example.test", "deep.sub.example.test", "example.test", "other.test", "dl.example.test")


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory) -> tuple[Path, Path, Path]:
    return make_test_ca(tmp_path_factory.mktemp("egress-ca"))


@pytest.fixture(scope="session")
def https_upstream(test_ca) -> Iterator[Upstream]:
    server = Upstream(cert=test_ca[1], key=test_ca[2], secret=SECRET)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def http_upstream() -> Iterator[Upstream]:
    server = Upstream(secret=SECRET)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def resolve_specs(https_upstream, http_upstream) -> list[str]:
    specs = [f"{host}=127.0.0.1:{https_upstream.port}" for host in HTTPS_HOSTS]
    specs.append(f"plain.example.test=127.0.0.1:{http_upstream.port}")
    # Mapped outside loopback on purpose: the guard must refuse it without dialling.
    specs.append("guarded.test=10.9.9.9:443")
    return specs


@pytest.fixture(scope="session")
def policy():
    return parse_policy(POLICY, origin="tests")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DirectProxy:
    """The real proxy process listening on 127.0.0.1, with its records collected."""

    def __init__(self, proc: ProxyProcess, placeholders: dict[str, str], url: str, ca: str) -> None:
        self.proc, self.placeholders, self.url, self.ca = proc, placeholders, url, ca
        self.placeholder = next(iter(placeholders.values()), "")  # the first secret's
        self.records: list[dict[str, Any]] = []

    @property
    def proxies(self) -> dict[str, str]:
        return {"http": self.url, "https": self.url}

    def synced_records(self) -> list[dict[str, Any]]:
        assert self.proc.sync(timeout_s=60)
        return self.records


@contextlib.contextmanager
def start_direct_proxy(work: Path, policy, values: dict[str, str], resolve_specs: list[str], ca: Path) -> Iterator[DirectProxy]:
    """The real proxy process on 127.0.0.1 for ``policy``, its secrets' real ``values`` given."""
    from skillctl.egress.rules import parse_resolve

    (work / "conf").mkdir(mode=0o700)
    placeholders = {name: make_placeholder(name) for name in values}
    resolve = {h: (a, p) for h, a, p in map(parse_resolve, resolve_specs)}
    config = proxy_config(policy, listen=("127.0.0.1", free_port()), confdir=work / "conf", values=values,
                          placeholders=placeholders, resolve=resolve, extra_ca=[str(ca)])
    holder: list[dict[str, Any]] = []
    proc = ProxyProcess(config, on_record=holder.append, cwd=work)
    proc.start()
    try:
        ready = proc.wait_ready()
        proxy = DirectProxy(proc, placeholders, f"http://127.0.0.1:{ready['listen'][1]}", ready["ca_cert"])
        proxy.records = holder
        yield proxy
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def direct_proxy(tmp_path_factory, policy, resolve_specs, test_ca) -> Iterator[DirectProxy]:
    with start_direct_proxy(tmp_path_factory.mktemp("direct-proxy"), policy, {"MY_TOKEN": SECRET}, resolve_specs, test_ca[0]) as proxy:
        yield proxy
