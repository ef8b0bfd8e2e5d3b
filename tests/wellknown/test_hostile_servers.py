"""Hostile and broken web servers: each is refused (one line naming the URL) or handled, within
bounded time and memory. The servers are real loopback HTTP servers; the hostile part is what a
route writes on the wire. No timed assertions: deadlines are what end the slow cases."""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from pathlib import Path

import pytest
from tools import require_tool

from skillctl.errors import IntegrityError, NotFoundError, RegistryError
from skillctl.project.registry_lock import install_locked, lock_skills
from skillctl.registry.wellknown.format import MAX_INDEX_ENTRIES, SCHEMA_URI

from bundle.archives import zero_bomb

from .conftest import WK
from .server import SiteServer, make_test_ca, reply

GB3 = 3 * 1024**3
MiB = 1 << 20
INDEX = f"/{WK}/index.json"
TALLY = f"/{WK}/tally/v1.1.0/tally.tar.gz"


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text, text
    return text


def refused_within(mib: int, call) -> str:
    """The one-line RegistryError ``call`` raises, checking Python allocated under ``mib`` MiB
    at its peak while getting there."""
    tracemalloc.start()
    try:
        with pytest.raises(RegistryError) as caught:
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < mib * MiB, peak
    return one_line(caught.value)


def test_wrong_digest_is_refused_and_nothing_is_installed(server: SiteServer, site_dir: Path, open_site, tmp_path: Path):
    lock = lock_skills({"tally": "^1", "note": "*"}, open_site(server.url))
    server.routes[TALLY] = lambda h: reply(h, 200, b"\x1f\x8b" + b"not the archive the index promised", {"Content-Type": "application/gzip"})
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(IntegrityError) as caught:
        install_locked(lock, open_site(server.url, cache_dir=False), dest)
    assert TALLY in one_line(caught.value)
    assert list(dest.iterdir()) == []  # note was fine, but nothing is written until all passed


def test_a_3gb_content_length_is_refused_unread(server: SiteServer, open_site):
    def huge(h) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/gzip")
        h.send_header("Content-Length", str(GB3))
        h.end_headers()
        try:
            h.wfile.write(b"\0" * 65536)  # then nothing: a reader that trusted the length would wait
        except OSError:
            pass

    reg = open_site(server.url)
    rec = reg.resolve("tally")
    server.routes[TALLY] = huge
    message = refused_within(8, lambda: reg.fetch(rec))
    assert f"announces {GB3} bytes" in message and "unread" in message


def test_an_endless_body_without_length_is_cut_at_the_cap(server: SiteServer, open_site):
    def endless(h) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()  # no Content-Length: read until the server closes
        chunk = b" " * 65536
        try:
            for _ in range(100_000):
                h.wfile.write(chunk)
        except OSError:
            pass
        h.close_connection = True

    server.routes[INDEX] = endless
    message = refused_within(40, lambda: open_site(server.url).list_skills())
    assert "sent more than" in message


def test_a_redirect_loop_is_named(server: SiteServer, open_site):
    server.routes[INDEX] = lambda h: reply(h, 302, headers={"Location": "/loop"})
    server.routes["/loop"] = lambda h: reply(h, 301, headers={"Location": INDEX})
    with pytest.raises(RegistryError) as caught:
        open_site(server.url).list_skills()
    assert "redirect loop" in one_line(caught.value)


def test_redirects_are_followed_within_limits(server: SiteServer, site_dir: Path, open_site):
    for i in range(3):
        server.routes[f"/hop{i}"] = lambda h, i=i: reply(h, 307, headers={"Location": f"/hop{i + 1}" if i < 2 else INDEX.replace("index", "moved")})
    server.routes[INDEX] = lambda h: reply(h, 308, headers={"Location": "/hop0"})
    (site_dir / WK / "moved.json").write_bytes((site_dir / WK / "index.json").read_bytes())
    assert [s.name for s in open_site(server.url).list_skills()] == ["note", "tally"]  # 4 hops: allowed
    for i in range(10):
        server.routes[f"/far{i}"] = lambda h, i=i: reply(h, 302, headers={"Location": f"/far{i + 1}"})
    server.routes[INDEX] = lambda h: reply(h, 302, headers={"Location": "/far0"})
    with pytest.raises(RegistryError) as caught:
        open_site(server.url).list_skills()
    assert "more than 5 redirects" in one_line(caught.value)


def test_redirects_to_other_schemes_are_refused(server: SiteServer, open_site):
    server.routes[INDEX] = lambda h: reply(h, 302, headers={"Location": "file:///etc/passwd"})
    with pytest.raises(RegistryError, match="not an http\\(s\\) URL"):
        open_site(server.url).list_skills()


def test_a_stalled_server_is_given_up_at_the_deadline(server: SiteServer, open_site):
    def trickle(h) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "1000000")
        h.end_headers()
        try:
            for _ in range(600):  # one byte every 0.1 s: each read succeeds, the whole never ends
                h.wfile.write(b" ")
                h.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass

    server.routes[INDEX] = trickle
    with pytest.raises(RegistryError) as caught:
        open_site(server.url, deadline_s=1.0).list_skills()
    assert "within 1 s" in one_line(caught.value) or "in time" in str(caught.value)


def test_a_server_that_never_answers_is_given_up_at_the_deadline(server: SiteServer, open_site):
    server.routes[INDEX] = lambda h: time.sleep(5)  # headers never come
    with pytest.raises(RegistryError) as caught:
        open_site(server.url, deadline_s=1.0).list_skills()
    assert "no complete answer within 1 s" in one_line(caught.value)


def _big_index(n: int) -> bytes:
    entries = [{"name": f"s{i}", "type": "skill-md", "description": "d", "url": "s.md", "digest": "sha256:" + "0" * 64} for i in range(n)]
    return json.dumps({"$schema": SCHEMA_URI, "skills": entries}, separators=(",", ":")).encode()


def test_an_index_with_100000_entries_is_refused_while_it_streams(server: SiteServer, open_site):
    body = _big_index(100_000)
    server.routes[INDEX] = lambda h: _send_unsized(h, body)
    message = refused_within(40, lambda: open_site(server.url).list_skills())
    assert "sent more than" in message


def _send_unsized(h, body: bytes) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.end_headers()
    try:
        h.wfile.write(body)
    except OSError:
        pass
    h.close_connection = True


def test_an_index_over_the_entry_cap_is_refused_before_any_entry_is_read(server: SiteServer, open_site):
    body = _big_index(MAX_INDEX_ENTRIES * 2)
    server.routes[INDEX] = lambda h: reply(h, 200, body, {"Content-Type": "application/json"})
    with pytest.raises(RegistryError) as caught:
        open_site(server.url).list_skills()
    assert f"lists {MAX_INDEX_ENTRIES * 2} skills, over the {MAX_INDEX_ENTRIES}" in one_line(caught.value)


def test_an_index_at_the_entry_cap_is_read(server: SiteServer, open_site):
    body = _big_index(MAX_INDEX_ENTRIES)
    server.routes[INDEX] = lambda h: reply(h, 200, body, {"Content-Type": "application/json"})
    assert len(open_site(server.url).list_skills()) == MAX_INDEX_ENTRIES


def test_a_compression_bomb_in_the_content_encoding_is_refused(server: SiteServer, open_site):
    bomb = zero_bomb(b'{"$schema": "', 1024 * MiB)
    server.routes[INDEX] = lambda h: reply(h, 200, bomb, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
    message = refused_within(40, lambda: open_site(server.url).list_skills())
    assert "decompresses to more than" in message


def test_a_server_gzipping_what_it_serves_is_read(server: SiteServer, site_dir: Path, open_site):
    """Apache's AddEncoding x-gzip .gz: the .tar.gz goes out as is, labelled as encoded; and a
    CDN compressing JSON on the fly."""
    raw = (site_dir / WK / "tally/v1.1.0/tally.tar.gz").read_bytes()
    index = (site_dir / WK / "index.json").read_bytes()
    server.routes[TALLY] = lambda h: reply(h, 200, raw, {"Content-Type": "application/x-tar", "Content-Encoding": "x-gzip"})
    server.routes[INDEX] = lambda h: reply(h, 200, gzip.compress(index), {"Content-Type": "application/json", "Content-Encoding": "gzip"})
    reg = open_site(server.url, cache_dir=False)
    assert reg.fetch(reg.resolve("tally")) == raw


def test_an_unsupported_content_encoding_is_one_line(server: SiteServer, open_site):
    server.routes[INDEX] = lambda h: reply(h, 200, b"\x00\x01", {"Content-Type": "application/json", "Content-Encoding": "br"})
    with pytest.raises(RegistryError, match="does not decode"):
        open_site(server.url).list_skills()


def test_a_truncated_answer_is_refused(server: SiteServer, open_site):
    def short(h) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "5000")
        h.end_headers()
        h.wfile.write(b'{"$schema":')
        h.close_connection = True

    server.routes[INDEX] = short
    with pytest.raises(RegistryError) as caught:
        open_site(server.url).list_skills()
    assert "incomplete" in one_line(caught.value) or "closed" in str(caught.value)


def test_server_errors_are_retried_then_reported(server: SiteServer, site_dir: Path, open_site):
    calls = []
    index = (site_dir / WK / "index.json").read_bytes()

    def flaky(h) -> None:
        calls.append(1)
        reply(h, 503, b"busy") if len(calls) == 1 else reply(h, 200, index, {"Content-Type": "application/json"})

    server.routes[INDEX] = flaky
    assert [s.name for s in open_site(server.url).list_skills()] == ["note", "tally"]
    assert len(calls) == 2  # the 503 was retried
    server.routes[INDEX] = lambda h: reply(h, 500, b"boom")
    with pytest.raises(RegistryError) as caught:
        open_site(server.url).list_skills()
    assert "failed with HTTP 500" in one_line(caught.value)


def test_an_index_that_is_not_json_is_one_line(server: SiteServer, open_site):
    server.routes[INDEX] = lambda h: reply(h, 200, b"<html>Welcome to nginx</html>", {"Content-Type": "text/html"})
    with pytest.raises(RegistryError) as caught:
        open_site(server.url).list_skills()
    assert "is not valid JSON" in one_line(caught.value)


def test_a_site_that_is_down_is_one_line(open_site):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(RegistryError) as caught:
            open_site(f"http://127.0.0.1:{port}", attempts=2).list_skills()
    assert "connection refused after 2 attempt(s)" in one_line(caught.value)


def test_an_artifact_missing_from_the_server_is_named(server: SiteServer, site_dir: Path, open_site):
    (site_dir / WK / "tally/v1.1.0/tally.tar.gz").unlink()
    reg = open_site(server.url)
    with pytest.raises(IntegrityError, match="missing .HTTP 404. although the index lists it"):
        reg.fetch(reg.resolve("tally"))


@pytest.fixture(scope="module")
def test_ca(tmp_path_factory):
    require_tool("openssl")
    return make_test_ca(tmp_path_factory.mktemp("tls"))


def test_https_redirecting_down_to_http_is_refused(test_ca, site_dir: Path, server: SiteServer, open_site):
    ca, cert, key = test_ca
    with SiteServer(site_dir, tls=(cert, key)) as tls:
        tls.routes[INDEX] = lambda h: reply(h, 302, headers={"Location": f"{server.url}{INDEX}"})
        with pytest.raises(RegistryError) as caught:
            open_site(tls.url, insecure=False, ca_bundle=str(ca)).list_skills()
    assert "from https to plain http" in one_line(caught.value)


def test_a_missing_version_is_not_found(server: SiteServer, open_site):
    with pytest.raises(NotFoundError):
        open_site(server.url).resolve("tally@9.9.9")
