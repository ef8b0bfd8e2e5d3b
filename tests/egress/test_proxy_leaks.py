"""Ways a secret could leak through the egress proxy, each tried as an attacker would: the real
value in the record of a request, injected into plain HTTP, sent under a TLS name the client
chose, reflected back encoded, in a status line or a header name, or lost with a trailer.

The proxy runs on its own on 127.0.0.1 (no container) with two secrets: ``MY_TOKEN`` (letters,
digits, dashes) for ``api.example.test`` and ``plain.example.test``, and ``SLASHY``, whose value
holds ``/``, ``+`` and ``=`` — the characters encoders change — for ``api.example.test``.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import secrets
import socket
import ssl
from typing import Iterator
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests

from skillctl.egress.policy import parse_policy

from .conftest import SECRET, DirectProxy, start_direct_proxy

SLASHY = "AKr/" + secrets.token_hex(8) + "+x/y="
POLICY = {
    "type": "allowlist",
    "allowed_domains": ["*.example.test", "other.test"],
    "domain_secrets": [
        {"domain": "api.example.test", "name": "MY_TOKEN", "value": "env:MY_TOKEN"},
        {"domain": "plain.example.test", "name": "MY_TOKEN", "value": "env:MY_TOKEN"},
        {"domain": "api.example.test", "name": "SLASHY", "value": "env:SLASHY"},
    ],
}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory, resolve_specs, test_ca) -> Iterator[DirectProxy]:
    policy = parse_policy(POLICY, origin="tests")
    with start_direct_proxy(tmp_path_factory.mktemp("leak-proxy"), policy, {"MY_TOKEN": SECRET, "SLASHY": SLASHY},
                            resolve_specs, test_ca[0]) as running:
        yield running


def encoded_forms(value: str) -> list[str]:
    """How a value can come back from an API: as it is, JSON-escaped, percent-encoded, base64."""
    raw = value.encode()
    lower_escapes = re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(value, safe=""))
    forms = {value, value.replace("/", "\\/"), quote(value, safe=""), lower_escapes,
             base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")}
    return sorted(forms)


def assert_no_form_of_the_secrets(text: str) -> None:
    for value in (SECRET, SLASHY):
        for form in encoded_forms(value):
            assert form not in text, f"{form!r} (a form of a real value) reached the client"


def get(proxy: DirectProxy, url: str, **kw) -> requests.Response:
    return requests.get(url, proxies=proxy.proxies, verify=proxy.ca, timeout=60, **kw)


def records_for(proxy: DirectProxy, host: str) -> list[dict]:
    return [r for r in proxy.synced_records() if r.get("host") == host]


# --------------------------------------------------------------------------- records


def test_the_record_holds_the_request_as_the_container_sent_it(proxy, https_upstream):
    ph = proxy.placeholders["MY_TOKEN"]
    resp = get(proxy, f"https://api.example.test/repos/{ph}/issues?{ph}&page=2", headers={"Authorization": f"token {ph}"})
    assert resp.status_code == 200
    assert https_upstream.seen[-1]["path"] == f"/repos/{SECRET}/issues?{SECRET}&page=2"  # injected upstream
    record = records_for(proxy, "api.example.test")[-1]
    assert record["path"] == f"/repos/{ph}/issues?{ph}&page=…"
    assert record["secrets"] == ["MY_TOKEN"]
    assert SECRET not in json.dumps(proxy.records)


# --------------------------------------------------------------------------- plain HTTP


def test_a_secret_is_never_injected_into_plain_http(proxy, http_upstream):
    ph = proxy.placeholders["MY_TOKEN"]
    resp = requests.get(f"http://plain.example.test/echo?k={ph}", headers={"Authorization": f"token {ph}"},
                        proxies=proxy.proxies, timeout=60)
    assert resp.status_code == 200
    seen = http_upstream.seen[-1]
    assert seen["headers"]["Authorization"] == f"token {ph}" and seen["path"] == f"/echo?k={ph}"
    record = records_for(proxy, "plain.example.test")[-1]
    assert record["secrets"] == []
    assert record["warnings"] == ["placeholder of MY_TOKEN not injected: plain HTTP to plain.example.test; "
                                  "secrets go only into HTTPS requests (use https://)"]


def test_a_secret_is_never_injected_into_plain_http_inside_a_tunnel(proxy, http_upstream):
    ph = proxy.placeholders["MY_TOKEN"]
    host, port = proxy.url.removeprefix("http://").split(":")
    before = len(http_upstream.seen)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(b"CONNECT plain.example.test:80 HTTP/1.1\r\nHost: plain.example.test:80\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")
        sock.sendall(f"GET /echo HTTP/1.1\r\nHost: plain.example.test\r\nAuthorization: token {ph}\r\n"
                     "Connection: close\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert len(http_upstream.seen) == before + 1
    assert http_upstream.seen[-1]["headers"]["Authorization"] == f"token {ph}"
    assert SECRET.encode() not in answer


# --------------------------------------------------------------------------- TLS names


def tunnel_with_sni(proxy: DirectProxy, connect_host: str, sni: str, request: bytes) -> bytes:
    """CONNECT to ``connect_host``, then TLS naming ``sni``; what came back (b"" if refused)."""
    host, port = proxy.url.removeprefix("http://").split(":")
    ctx = ssl.create_default_context(cafile=proxy.ca)
    ctx.check_hostname = False  # the client chooses the name; only the proxy's checks are under test
    with socket.create_connection((host, int(port)), timeout=60) as raw:
        raw.sendall(f"CONNECT {connect_host}:443 HTTP/1.1\r\nHost: {connect_host}:443\r\n\r\n".encode())
        assert raw.recv(1024).startswith(b"HTTP/1.1 200")
        try:
            with ctx.wrap_socket(raw, server_hostname=sni) as tls:
                tls.sendall(request)
                answer = b""
                while chunk := tls.recv(65536):
                    answer += chunk
                return answer
        except (ssl.SSLError, ConnectionError):
            return b""


@pytest.mark.parametrize("sni", ["evil.test", "other.test"])
def test_a_tunnel_whose_tls_name_differs_from_its_connect_host_is_refused(proxy, https_upstream, sni):
    ph = proxy.placeholders["MY_TOKEN"]
    before = len(https_upstream.seen)
    request = (f"GET /echo HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: token {ph}\r\n"
               "Connection: close\r\n\r\n").encode()
    answer = tunnel_with_sni(proxy, "api.example.test", sni, request)
    assert not answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert len(https_upstream.seen) == before  # nothing reached the upstream, least of all the secret
    assert SECRET.encode() not in answer
    refusals = [r for r in proxy.synced_records() if r["decision"] == "denied" and sni in r["reason"]]
    assert refusals and "differs from the CONNECT host api.example.test" in refusals[-1]["reason"]


def test_the_same_name_in_connect_and_tls_goes_through_and_upstream_tls_names_it(proxy, https_upstream):
    request = b"GET /echo HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n"
    assert tunnel_with_sni(proxy, "api.example.test", "api.example.test", request).startswith(b"HTTP/1.1 200")
    assert https_upstream.seen[-1]["sni"] == "api.example.test"


# --------------------------------------------------------------------------- reflections


def test_a_value_reflected_in_common_encodings_is_scrubbed(proxy):
    ph = proxy.placeholders["SLASHY"]
    resp = get(proxy, "https://api.example.test/reflect", headers={"x-reflect": ph}, allow_redirects=False)
    assert resp.status_code == 200, resp.text
    assert_no_form_of_the_secrets(resp.text)
    assert_no_form_of_the_secrets(json.dumps(dict(resp.headers)))
    body = resp.json()
    # JSON and percent-encoding decode to the placeholder, as the raw value would have.
    assert body["php"] == ph and body["unicode"] == ph
    assert parse_qs(urlsplit(resp.headers["location"]).query)["token"] == [ph]
    # base64 cannot be given the placeholder's length: the value's bytes are masked instead.
    for field, decode in (("base64", base64.b64decode), ("base64url", lambda t: base64.urlsafe_b64decode(t + "=" * (-len(t) % 4))),
                          ("inside", base64.b64decode)):
        decoded = decode(body[field])
        assert SLASHY.encode() not in decoded and SLASHY[4:20].encode() not in decoded, field
    assert base64.b64decode(body["inside"]).startswith(b"user:") and base64.b64decode(body["inside"]).endswith(b"@host")


def test_the_status_line_and_header_names_are_scrubbed(proxy):
    ph = proxy.placeholders["MY_TOKEN"]
    ctx = ssl.create_default_context(cafile=proxy.ca)
    host, port = proxy.url.removeprefix("http://").split(":")
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)
    conn.set_tunnel("api.example.test", 443)
    conn.request("GET", "/reflect-status", headers={"x-reflect": ph})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.status == 401 and resp.reason == f"bad token {ph}"
    names = [name.lower() for name, _ in resp.getheaders()]
    assert f"x-{ph}".lower() in names
    assert SECRET.lower() not in " ".join(names) and SECRET not in resp.reason


def test_a_chunked_response_with_trailers_arrives_whole_and_scrubbed(proxy):
    ph = proxy.placeholders["MY_TOKEN"]
    host, port = proxy.url.removeprefix("http://").split(":")
    ctx = ssl.create_default_context(cafile=proxy.ca)
    with socket.create_connection((host, int(port)), timeout=60) as raw:
        raw.sendall(b"CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n")
        assert raw.recv(1024).startswith(b"HTTP/1.1 200")
        with ctx.wrap_socket(raw, server_hostname="api.example.test") as tls:
            tls.sendall(f"GET /trailers HTTP/1.1\r\nHost: api.example.test\r\nTE: trailers\r\nx-reflect: {ph}\r\n"
                        "Connection: close\r\n\r\n".encode())
            answer = b""
            while chunk := tls.recv(65536):
                answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"chunked" in head.lower()
    data, trailers = dechunk(body)
    assert data == f"first chunk\nthe value: {ph}\nlast chunk\n".encode()
    assert trailers == [f"x-checksum: {ph}".encode()]
    assert SECRET.encode() not in answer


def dechunk(body: bytes) -> tuple[bytes, list[bytes]]:
    """A complete chunked body → (data, trailer lines); AssertionError if it is cut short."""
    data, pos = b"", 0
    while True:
        end = body.index(b"\r\n", pos)
        size = int(body[pos:end].split(b";")[0], 16)
        pos = end + 2
        if size == 0:
            break
        data += body[pos : pos + size]
        assert body[pos + size : pos + size + 2] == b"\r\n", "chunk not terminated"
        pos += size + 2
    trailers = []
    while True:
        end = body.index(b"\r\n", pos)
        if end == pos:
            return data, trailers
        trailers.append(body[pos:end])
        pos = end + 2


def test_request_trailers_get_the_secret_like_headers(proxy, https_upstream):
    ph = proxy.placeholders["MY_TOKEN"]
    host, port = proxy.url.removeprefix("http://").split(":")
    ctx = ssl.create_default_context(cafile=proxy.ca)
    with socket.create_connection((host, int(port)), timeout=60) as raw:
        raw.sendall(b"CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n")
        assert raw.recv(1024).startswith(b"HTTP/1.1 200")
        with ctx.wrap_socket(raw, server_hostname="api.example.test") as tls:
            tls.sendall(b"PUT /echo HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\nTrailer: x-sig\r\n"
                        b"Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nx-sig: " + ph.encode() + b"\r\n\r\n")
            answer = b""
            while chunk := tls.recv(65536):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    seen = https_upstream.seen[-1]
    assert seen["body"] == "hello world" and seen["trailers"] == [f"x-sig: {SECRET}"]
    assert records_for(proxy, "api.example.test")[-1]["secrets"] == ["MY_TOKEN"]


def test_what_the_proxy_process_prints_is_scrubbed_on_the_host_too(tmp_path):
    """A second line of defence: were the proxy ever to print a real value — in a record or in
    an error — the host scrubs it before it reaches a record handler or a message."""
    import sys

    from skillctl.egress.process import ProxyProcess
    from skillctl.errors import EgressError

    leaky = tmp_path / "leaky-python"
    leaky.write_text(f"""#!{sys.executable}
import json, sys
config = json.loads(sys.stdin.readline())
value = config["secrets"][0]["value"]
print(json.dumps({{"type": "egress", "path": "/x/" + value, "error": json.dumps(value)}}), flush=True)
print("Traceback: request to /x/" + value + " failed", file=sys.stderr, flush=True)
""")
    leaky.chmod(0o755)
    config = {"secrets": [{"name": "SLASHY", "domains": ["api.example.test"], "placeholder": "ph-SLASHY", "value": SLASHY}]}
    records: list[dict] = []
    proc = ProxyProcess(config, on_record=records.append, cwd=tmp_path, python=str(leaky))
    proc.start()
    with pytest.raises(EgressError) as err:
        proc.wait_ready(timeout_s=60)
    proc.stop()
    assert records and records[0]["path"] == "/x/ph-SLASHY" and SLASHY not in json.dumps(records)
    assert "ph-SLASHY" in str(err.value) and SLASHY not in str(err.value)


def test_a_placeholder_inside_basic_credentials_is_injected_over_https_only(proxy, https_upstream, http_upstream):
    # git and `curl -u user:$TOKEN` send a token as the Basic password, base64-encoded.
    ph = proxy.placeholders["MY_TOKEN"]
    basic = "Basic " + base64.b64encode(f"x-access-token:{ph}".encode()).decode()
    assert get(proxy, "https://api.example.test/echo", headers={"Authorization": basic}).status_code == 200
    sent = https_upstream.seen[-1]["headers"]["Authorization"]
    assert base64.b64decode(sent.removeprefix("Basic ")) == f"x-access-token:{SECRET}".encode()
    assert records_for(proxy, "api.example.test")[-1]["secrets"] == ["MY_TOKEN"]
    requests.get("http://plain.example.test/echo", headers={"Authorization": basic}, proxies=proxy.proxies, timeout=60)
    assert http_upstream.seen[-1]["headers"]["Authorization"] == basic
    assert "not injected: plain HTTP" in records_for(proxy, "plain.example.test")[-1]["warnings"][0]
