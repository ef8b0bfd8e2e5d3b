"""Fixtures for ``skillctl serve``: a real uvicorn server on a free loopback port, in a thread,
over a real registry (a folder, or Debian's docker-registry), with a real keys file; the
vendors' own SDKs as clients. Every test gets its own HOME, data, cache and registry folders.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable, Iterator

import pytest

from sandbox_fixtures import on_ci

from .helpers import Keys

# Without the serve extra (pip install -e '.[serve,test]') there is nothing to test here; on CI
# setup installs it, so a missing module must fail there rather than pass as an empty run.
_MISSING = [m for m in ("starlette", "uvicorn", "multipart", "anthropic") if importlib.util.find_spec(m) is None]
if _MISSING and not on_ci():
    collect_ignore_glob = ["test_*.py"]  # noqa: F841 - read by pytest


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / "cache"))
    monkeypatch.setenv("SKILLCTL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(tmp_path / "default-registry"))
    for var in ("SKILLCTL_INSECURE", "SKILLCTL_SITE_TOKEN", "SOURCE_DATE_EPOCH", "SKILLCTL_SERVE_KEYS", "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "NETRC"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    from skillctl.serve.keys import add_key

    path = tmp_path / "keys.json"
    admin, _ = add_key(path, "admin", frozenset({"read", "publish", "admin"}))
    writer, _ = add_key(path, "writer", frozenset({"read", "publish"}))
    reader, _ = add_key(path, "reader", frozenset({"read"}))
    return Keys(path, admin, writer, reader)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """Where tests write skill folders."""
    return tmp_path / "src"


@pytest.fixture
def start_server(tmp_path: Path, keys: Keys) -> Iterator[Callable[..., object]]:
    """``start_server(registry_url=None, *, listen=None, **settings)``: a started SkillServer
    (stopped at the end of the test); by default over a fresh folder registry with ``keys``."""
    from skillctl.registry import open_registry
    from skillctl.serve.app import ServeSettings
    from skillctl.serve.server import Listen, SkillServer

    started: list[SkillServer] = []

    def start(registry_url: str | None = None, *, listen: Listen | None = None, insecure: bool | None = None,
              **settings: object) -> SkillServer:
        url = registry_url or str(tmp_path / "registry")
        # create: servers here may start on a new folder and take uploads (the CLI refuses a missing one)
        options = {"create": True, **({"insecure": insecure} if insecure is not None else {})}
        settings.setdefault("keys", keys.path)
        server = SkillServer(
            ServeSettings(open_registry=lambda: open_registry(url, **options), registry_url=url, **settings),
            listen or Listen(port=0, shutdown_timeout_s=5),
        )
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def server(start_server):
    return start_server()
