"""Passthrough domains: TLS spliced through the proxy unopened, after the CONNECT host passed the
allowlist, the ClientHello's server name matched it and the address passed the same checks as
an intercepted request's. The real proxy process on 127.0.0.1, the loopback upstreams; the
container side is in ``test_isolation.py`` (``dl.example.test``).

Policy here: ``*.example.test`` and ``guarded.test`` pass through — except ``api.example.test``,
which holds a secret and so is intercepted all the same.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from typing import Iterator

import pytest
import requests

from skillctl.egress.policy import parse_policy
from skillctl.egress.splice import ACCESS_DENIED_ALERT, Refused, parse_client_hello

from .conftest import SECRET, DirectProxy, free_port, start_direct_proxy

POLICY = {
    "type": "allowlist",
    "allowed_domains": ["*.example.test", "other.test", "guarded.test"],
    "domain_secrets": [{"domain": "api.example.test", "name": "MY_TOKEN", "value": "env:MY_TOKEN"}],
    "passthrough_domains": ["*.example.test", "guarded.test"],
}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory, resolve_specs, test_ca) -> Iterator[DirectProxy]:
    policy = parse_policy(POLICY, origin="tests")
    dead = [f"dead.example.test=127.0.0.1:{free_port()}"]  # nothing listens there
    with start_direct_proxy(tmp_path_factory.mktemp("splice"), policy, {"MY_TOKEN": SECRET}, resolve_specs + dead, test_ca[0]) as p:
        yield p


def records(proxy: DirectProxy, host: str) -> list[dict]:
    return [r for r in proxy.synced_records() if r.get("host") == host]


def tunnel(proxy: DirectProxy, host: str) -> socket.socket:
    """A CONNECT tunnel to ``host``:443 through the proxy, answered 200."""
    phost, pport = proxy.url.removeprefix("http://").split(":")
    sock = socket.create_connection((phost, int(pport)), timeout=60)
    sock.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(4096)
        assert chunk, answer
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer
    return sock


def fetch(proxy: DirectProxy, host: str, path: str, cafile: str) -> tuple[int, bytes]:
    """GET over a tunnel through the proxy, closed afterwards (a passthrough record is written
    when its connection ends; requests would keep it in its pool)."""
    phost, pport = proxy.url.removeprefix("http://").split(":")
    conn = http.client.HTTPSConnection(phost, int(pport), context=ssl.create_default_context(cafile=cafile), timeout=60)
    conn.set_tunnel(host, 443)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_a_passthrough_domain_gets_the_upstreams_own_certificate_and_one_record(proxy, https_upstream, test_ca):
    # Verified against the test CA alone: the certificate is the upstream's, not the proxy's.
    status, body = fetch(proxy, "files.example.test", "/echo?q=1", str(test_ca[0]))
    assert status == 200 and json.loads(body)["path"] == "/echo?q=1"
    assert https_upstream.seen[-1]["sni"] == "files.example.test"
    record = records(proxy, "files.example.test")[-1]
    assert record["mode"] == "passthrough" and record["decision"] == "allowed" and record["error"] is None
    assert record["method"] == "CONNECT" and record["port"] == 443 and record["path"] == ""
    assert "path" in record["not_seen"] and record["upstream"] == f"127.0.0.1:{https_upstream.port}"
    assert record["request_bytes"] > 0 and record["response_bytes"] > len(body)  # TLS bytes, both ways
    assert record["duration_ms"] >= 0 and "passthrough (*.example.test)" in record["reason"]


def test_a_secrets_domain_under_a_passthrough_wildcard_is_intercepted(proxy, https_upstream):
    ph = proxy.placeholder
    resp = requests.get("https://api.example.test/echo", headers={"Authorization": f"Bearer {ph}"}, proxies=proxy.proxies,
                        verify=proxy.ca, timeout=60)
    assert https_upstream.seen[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"  # injected: intercepted
    assert SECRET not in resp.text and ph in resp.text  # and the echo scrubbed
    record = records(proxy, "api.example.test")[-1]
    assert record["mode"] == "intercept" and record["secrets"] == ["MY_TOKEN"] and record["path"] == "/echo"
    revealed = requests.get("https://api.example.test/reveal", proxies=proxy.proxies, verify=proxy.ca, timeout=60)
    assert SECRET not in revealed.text and ph in revealed.text


def test_a_tls_name_other_than_the_connect_host_is_refused_before_the_upstream(proxy, https_upstream, test_ca):
    # Checked as files.example.test, talking TLS to api.example.test (the secret's domain, which
    # the proxy would have intercepted): refused with a TLS alert, nothing reaches the upstream.
    before = len(https_upstream.seen)
    sock = tunnel(proxy, "files.example.test")
    ctx = ssl.create_default_context(cafile=str(test_ca[0]))
    with pytest.raises(ssl.SSLError, match="ACCESS_DENIED|access denied"):
        ctx.wrap_socket(sock, server_hostname="api.example.test")
    sock.close()
    record = records(proxy, "files.example.test")[-1]
    assert record["mode"] == "passthrough" and record["decision"] == "denied"
    assert record["reason"] == "the TLS server name (SNI) api.example.test differs from the CONNECT host files.example.test"
    assert len(https_upstream.seen) == before


def test_a_tunnel_without_a_tls_name_or_without_tls_is_refused(proxy, test_ca):
    ctx = ssl.create_default_context(cafile=str(test_ca[0]))
    ctx.check_hostname = False
    sock = tunnel(proxy, "files.example.test")
    with pytest.raises(ssl.SSLError):
        ctx.wrap_socket(sock, server_hostname=None)  # no SNI at all
    sock.close()
    assert "names no server (SNI)" in records(proxy, "files.example.test")[-1]["reason"]
    sock = tunnel(proxy, "files.example.test")
    sock.sendall(b"GET /echo HTTP/1.1\r\nHost: files.example.test\r\n\r\n")
    assert not sock.recv(4096).startswith(b"HTTP/")  # an alert, then closed: nothing relayed
    sock.close()
    record = records(proxy, "files.example.test")[-1]
    assert record["decision"] == "denied" and "does not carry TLS" in record["reason"]


def test_an_upstream_that_cannot_be_reached_and_a_client_that_leaves_are_recorded(proxy, test_ca):
    sock = ssl.create_default_context(cafile=str(test_ca[0])).wrap_socket
    with pytest.raises((ssl.SSLError, OSError)):
        sock(tunnel(proxy, "dead.example.test"), server_hostname="dead.example.test")
    record = records(proxy, "dead.example.test")[-1]
    assert record["decision"] == "allowed" and record["error"].startswith("cannot connect to 127.0.0.1:")
    tunnel(proxy, "files.example.test").close()  # gone before its ClientHello
    give_up = time.monotonic() + 60
    while "before its TLS ClientHello" not in (records(proxy, "files.example.test")[-1]["error"] or ""):
        assert time.monotonic() < give_up, records(proxy, "files.example.test")[-1]
        time.sleep(0.05)


def test_a_domain_not_allowed_is_refused_at_connect(proxy):
    with pytest.raises(requests.exceptions.ProxyError, match="403"):
        requests.get("https://evil.invalid/", proxies=proxy.proxies, verify=proxy.ca, timeout=60)
    record = records(proxy, "evil.invalid")[-1]
    assert record["decision"] == "denied" and record["mode"] == "intercept" and "not in allowed_domains" in record["reason"]


@pytest.mark.parametrize(
    "host, why",
    [("guarded.test", "only upstreams in 127.0.0.0/8"), ("unmapped.example.test", "no DNS lookups")],
)
def test_a_passthrough_domain_gets_the_same_address_checks(proxy, host, why):
    with pytest.raises(requests.exceptions.ProxyError, match="403"):
        requests.get(f"https://{host}/", proxies=proxy.proxies, timeout=60)
    record = records(proxy, host)[-1]
    assert record["mode"] == "passthrough" and record["decision"] == "denied" and why in record["reason"]


def test_plain_http_to_a_passthrough_domain_is_intercepted(proxy, http_upstream):
    # Nothing to splice without TLS: the request is seen, checked and logged as usual.
    resp = requests.get("http://plain.example.test/echo", proxies=proxy.proxies, timeout=60)
    assert resp.status_code == 200
    assert records(proxy, "plain.example.test")[-1]["mode"] == "intercept"


def test_no_record_holds_the_real_value(proxy):
    assert SECRET not in json.dumps(proxy.synced_records())


def test_a_tunnel_still_open_is_recorded_when_it_closes(proxy, test_ca):
    # A sync does not wait for a tunnel a live process keeps open (idle in a pool, say); its
    # record comes when it closes, with the bytes of its whole life.
    sock = ssl.create_default_context(cafile=str(test_ca[0])).wrap_socket(tunnel(proxy, "deep.sub.example.test"),
                                                                          server_hostname="deep.sub.example.test")
    sock.sendall(b"GET /echo HTTP/1.1\r\nHost: deep.sub.example.test\r\n\r\n")
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    assert proxy.proc.sync(timeout_s=60)
    assert not records(proxy, "deep.sub.example.test")
    sock.close()
    give_up = time.monotonic() + 60
    while not records(proxy, "deep.sub.example.test"):
        assert time.monotonic() < give_up, "the closed tunnel was never recorded"
        time.sleep(0.05)
    record = records(proxy, "deep.sub.example.test")[-1]
    assert record["mode"] == "passthrough" and record["response_bytes"] > 0 and record["error"] is None


# --------------------------------------------------------------------------- the ClientHello itself


def client_hello(server_name: str | None = "files.example.test") -> bytes:
    """A real ClientHello, as Python's TLS client writes it (one TLS record)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = server_name is not None
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def with_extension(record: bytes, kind: int, data: bytes = b"\x00" * 8) -> bytes:
    """``record`` (one ClientHello record) with one more extension, every length fixed up."""
    hs = record[5:]
    body = hs[4:]
    pos = 2 + 32
    pos += 1 + body[pos]
    pos += 2 + int.from_bytes(body[pos:pos + 2], "big")
    pos += 1 + body[pos]
    ext_len = int.from_bytes(body[pos:pos + 2], "big")
    extra = kind.to_bytes(2, "big") + len(data).to_bytes(2, "big") + data
    body = body[:pos] + (ext_len + len(extra)).to_bytes(2, "big") + body[pos + 2:] + extra
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return record[:3] + len(hs).to_bytes(2, "big") + hs


def test_the_client_hello_parser_reads_the_name_and_refuses_what_is_not_one():
    record = client_hello()
    assert parse_client_hello(record[5:]) == ("files.example.test", False)
    assert parse_client_hello(client_hello(None)[5:]) == (None, False)
    assert parse_client_hello(with_extension(record, 0xFE0D)[5:]) == ("files.example.test", True)
    with pytest.raises(Refused, match="malformed"):
        parse_client_hello(record[5:60])  # cut short inside the message
    with pytest.raises(Refused, match="not a ClientHello"):
        parse_client_hello(b"\x02" + record[6:])


def test_encrypted_client_hello_and_oversized_hellos_are_refused(proxy, https_upstream):
    before = len(https_upstream.seen)
    sock = tunnel(proxy, "files.example.test")
    sock.sendall(with_extension(client_hello(), 0xFE0D))
    assert sock.recv(64) == ACCESS_DENIED_ALERT
    sock.close()
    assert "Encrypted Client Hello" in records(proxy, "files.example.test")[-1]["reason"]
    sock = tunnel(proxy, "files.example.test")
    sock.sendall(b"\x16\x03\x01\x00\x04\x01\x10\x00\x00")  # a ClientHello announcing 1 MiB
    assert sock.recv(64) == ACCESS_DENIED_ALERT
    sock.close()
    assert "larger than" in records(proxy, "files.example.test")[-1]["reason"]
    assert len(https_upstream.seen) == before
