"""Where a site's key goes: to the site's own origin (scheme, host, port) and nowhere else.

Each origin is a real loopback server that records the headers of every request, so the tests
see exactly what reached it: the site itself, a server it redirects to, a host its index points
artifacts at, an index a lock names elsewhere. The key never appears in a message or in the
cache, and what the cache writes is its owner's alone."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from skillctl.errors import RegistryError
from skillctl.registry import open_registry

from .conftest import WK
from .server import SiteServer, reply

KEY = "skctl_testkey-0123456789abcdefghijklmnopqrstuvwxyzABCD"
INDEX = f"/{WK}/index.json"


def auth_headers(server: SiteServer) -> list[str | None]:
    """The Authorization header of every request ``server`` received (None where there was none)."""
    return [{k.lower(): v for k, v in r.headers.items()}.get("authorization") for r in server.log]


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and KEY not in text, text
    return text


@pytest.fixture
def other(site_dir: Path):
    """The same site on a second loopback origin (another port)."""
    with SiteServer(site_dir) as srv:
        yield srv


def test_the_key_goes_to_the_site_with_every_request(server: SiteServer, open_site, tmp_path: Path) -> None:
    reg = open_site(server.url, token=KEY)
    reg.fetch(reg.resolve("tally"))
    assert server.log and auth_headers(server) == [f"Bearer {KEY}"] * len(server.log)


def test_a_redirect_to_another_origin_gets_no_key(server: SiteServer, other: SiteServer, open_site) -> None:
    server.routes[INDEX] = lambda h: reply(h, 302, headers={"Location": f"{other.url}{INDEX}"})
    assert [s.name for s in open_site(server.url, token=KEY).list_skills()] == ["note", "tally"]
    assert server.log[0].path == INDEX and set(auth_headers(server)) == {f"Bearer {KEY}"}
    assert [r.path for r in other.log] == [INDEX] and auth_headers(other) == [None]


def test_a_redirect_within_the_origin_keeps_the_key(server: SiteServer, site_dir: Path, open_site) -> None:
    (site_dir / WK / "moved.json").write_bytes((site_dir / WK / "index.json").read_bytes())
    server.routes[INDEX] = lambda h: reply(h, 301, headers={"Location": f"/{WK}/moved.json"})
    open_site(server.url, token=KEY).list_skills()
    assert [r.path for r in server.log][:2] == [INDEX, f"/{WK}/moved.json"]
    assert set(auth_headers(server)) == {f"Bearer {KEY}"}


def test_artifacts_on_another_host_get_no_key(server: SiteServer, other: SiteServer, site_dir: Path, open_site) -> None:
    # An index without snapshots whose artifact URLs are absolute, on the other origin.
    index = json.loads((site_dir / WK / "index.json").read_text())
    for entry in index["skills"]:
        entry["url"] = f"{other.url}/{WK}/{entry['url']}"
    server.routes[INDEX] = lambda h: reply(h, 200, json.dumps(index).encode(), {"Content-Type": "application/json"})
    for path in ("tally/versions.json", "versions.json", "tally/v1.1.0/index.json"):
        server.routes[f"/{WK}/{path}"] = lambda h: reply(h, 404)
    reg = open_site(server.url, token=KEY)
    reg.fetch(reg.resolve("tally"))
    assert [r.path for r in other.log] == [f"/{WK}/tally/v1.1.0/tally.tar.gz"]
    assert auth_headers(other) == [None]
    assert set(auth_headers(server)) == {f"Bearer {KEY}"}


def test_a_locked_index_on_another_origin_gets_no_key(server: SiteServer, other: SiteServer, open_site) -> None:
    reg = open_site(server.url, token=KEY)
    locked = reg.resolve("tally@1.1.0", index_url=f"{other.url}/{WK}/tally/v1.1.0/index.json")
    reg.fetch(locked)
    assert other.log and set(auth_headers(other)) == {None}


def test_credentials_wanted_by_another_origin_are_named_as_such(server: SiteServer, other: SiteServer, open_site) -> None:
    server.routes[INDEX] = lambda h: reply(h, 302, headers={"Location": f"{other.url}{INDEX}"})
    other.routes[INDEX] = lambda h: reply(h, 401, b"who are you", {"WWW-Authenticate": "Bearer"})
    with pytest.raises(RegistryError) as caught:
        open_site(server.url, token=KEY).list_skills()
    line = one_line(caught.value)
    assert f"{other.url}{INDEX} answered HTTP 401" in line and "own origin only" in line


def test_netrc_and_url_credentials_are_never_sent(server: SiteServer, other: SiteServer, open_site, tmp_path: Path) -> None:
    # requests fills Authorization from ~/.netrc (matched by host name alone, so for every port
    # of 127.0.0.1) unless an auth hook is given; the site client always gives one.
    netrc = tmp_path / "home" / ".netrc"
    netrc.parent.mkdir(parents=True, exist_ok=True)
    netrc.write_text("machine 127.0.0.1 login someone password netrc-secret\n")
    netrc.chmod(0o600)
    server.routes[INDEX] = lambda h: reply(h, 302, headers={"Location": f"{other.url}{INDEX}"})
    open_site(server.url, token=KEY).list_skills()
    keyed = len(server.log)
    open_site(server.url).list_skills()
    assert set(auth_headers(server)[:keyed]) == {f"Bearer {KEY}"} and set(auth_headers(server)[keyed:]) == {None}
    assert len(other.log) == 2 and set(auth_headers(other)) == {None}
    with pytest.raises(RegistryError) as caught:
        open_site(server.url.replace("://", "://someone:url-secret@"))
    assert "holds credentials" in str(caught.value) and "url-secret" not in str(caught.value)


def test_plain_http_without_insecure_is_refused_before_the_key_is_sent(server: SiteServer) -> None:
    with pytest.raises(RegistryError, match="plain http.*--insecure"):
        open_registry(server.url, token=KEY).list_skills()
    assert server.log == []


def test_documents_read_with_a_key_are_asked_for_again_despite_max_age(site_dir: Path, open_site) -> None:
    # Without a key the same answers are fresh for an hour: see
    # test_client.py::test_max_age_documents_are_not_asked_for_again.
    with SiteServer(site_dir, cache_control="max-age=3600") as srv:
        open_site(srv.url, token=KEY).list_skills()
        srv.clear()
        open_site(srv.url, token=KEY).list_skills()
        assert INDEX in srv.requests()  # the server sees each use of what was read with a key
        assert all(r.headers.get("If-None-Match") for r in srv.log)  # ...which costs a 304, no body

        srv.clear()
        open_site(srv.url).list_skills()
        assert INDEX in srv.requests()  # and a run without the key is not served the keyed copy


def test_the_cache_holds_no_key_and_is_private_to_its_owner(server: SiteServer, open_site, tmp_path: Path) -> None:
    reg = open_site(server.url, token=KEY)
    reg.fetch(reg.resolve("tally"))
    cache = tmp_path / "cache"
    paths = list(cache.rglob("*"))
    assert any(p.is_file() for p in paths)
    for path in [cache, *paths]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in repr(reg.client.http.key)


def test_a_key_a_header_cannot_carry_is_refused_without_showing_it(server: SiteServer, open_site, monkeypatch) -> None:
    for bad in ("", "two words", "line\r\nX-Injected: 1", "ключ"):
        with pytest.raises(RegistryError) as caught:
            open_site(server.url, token=bad)
        assert "is not a key" in one_line(caught.value) and (not bad or bad not in str(caught.value))
    monkeypatch.setenv("SKILLCTL_SITE_TOKEN", "  ")  # blank: no key at all
    assert open_site(server.url).client.http.key is None
    monkeypatch.setenv("SKILLCTL_SITE_TOKEN", KEY)
    assert open_site(server.url).client.http.key is not None
    assert server.log == []


def test_a_key_for_a_folder_or_oci_registry_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="only for a well-known site.*folder registry"):
        open_registry(str(tmp_path / "reg"), token=KEY)
    with pytest.raises(RegistryError, match="only for a well-known site.*oci://"):
        open_registry("oci://127.0.0.1:9/team", token=KEY)
    with pytest.raises(RegistryError, match="takes a key"):
        open_registry("https://127.0.0.1:9", username="me", password="pw")
