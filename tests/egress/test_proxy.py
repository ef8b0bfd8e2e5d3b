"""The egress proxy process on its own (no container): a real mitmproxy with the addon on
127.0.0.1, real HTTPS/HTTP upstreams on loopback, the real ``requests`` client on the host.

What the policy allows and refuses, secret injection for its domain only, scrubbing of real
values from responses, and the record of every request. The container-side view (isolation,
environment, the CA in the container) is in ``test_isolation.py``.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl

import pytest
import requests

from .conftest import SECRET


def get(proxy, url: str, **kw) -> requests.Response:
    return requests.get(url, proxies=proxy.proxies, verify=proxy.ca, timeout=60, **kw)


def last_record(proxy, host: str) -> dict:
    return [r for r in proxy.synced_records() if r.get("host") == host][-1]


def test_allowed_https_request_reaches_the_mapped_loopback_upstream(direct_proxy, https_upstream):
    resp = get(direct_proxy, "https://api.example.test/echo?q=hello&n=2")
    assert resp.status_code == 200, resp.text
    assert resp.json()["path"] == "/echo?q=hello&n=2"
    record = last_record(direct_proxy, "api.example.test")
    assert record["decision"] == "allowed" and record["status"] == 200
    assert record["method"] == "GET" and record["port"] == 443 and record["scheme"] == "https"
    assert record["path"] == "/echo?q=…&n=…"  # query values never reach the log
    assert record["upstream"] == f"127.0.0.1:{https_upstream.port}"
    assert record["response_bytes"] == len(resp.content)


def test_kept_alive_connection_is_reused_upstream_too(direct_proxy, https_upstream):
    # More requests than mitmproxy's five connections per upstream address: were each one to
    # open a new upstream connection, the sixth would wait forever.
    ctx = ssl.create_default_context(cafile=direct_proxy.ca)
    host, port = direct_proxy.url.removeprefix("http://").split(":")
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)
    conn.set_tunnel("files.example.test", 443)
    before = len(https_upstream.seen)
    for _ in range(8):
        conn.request("GET", "/echo")
        assert conn.getresponse().read()
    conn.close()
    assert len({r["client_port"] for r in https_upstream.seen[before:]}) == 1


def test_allowed_plain_http_request(direct_proxy, http_upstream):
    before = len(http_upstream.seen)
    resp = requests.get("http://plain.example.test/echo", proxies=direct_proxy.proxies, timeout=60)
    assert resp.status_code == 200
    assert len(http_upstream.seen) == before + 1
    assert last_record(direct_proxy, "plain.example.test")["scheme"] == "http"


def test_denied_https_domain_is_refused_at_connect(direct_proxy):
    with pytest.raises(requests.exceptions.ProxyError, match="403"):
        get(direct_proxy, "https://evil.invalid/")
    record = last_record(direct_proxy, "evil.invalid")
    assert record["method"] == "CONNECT" and record["decision"] == "denied" and record["status"] == 403
    assert "not in allowed_domains" in record["reason"]


def test_denied_plain_http_gets_a_403_body_naming_the_policy(direct_proxy):
    resp = requests.get("http://evil.invalid/x", proxies=direct_proxy.proxies, timeout=60)
    assert resp.status_code == 403
    assert resp.headers["x-skillctl-egress"] == "denied"
    assert "network policy" in resp.text and "allowlist of 6 domain(s) from tests" in resp.text
    assert "evil.invalid is not in allowed_domains" in resp.text


def test_wildcard_allows_subdomains_at_any_depth_but_not_the_domain_itself(direct_proxy):
    assert get(direct_proxy, "https://files.example.test/echo").status_code == 200
    assert get(direct_proxy, "https://deep.sub.example.test/echo").status_code == 200
    with pytest.raises(requests.exceptions.ProxyError, match="403"):
        get(direct_proxy, "https://example.test/echo")  # mapped, but *.example.test does not cover it


@pytest.mark.parametrize(
    "host, why",
    [("10.1.2.3", "a private address"), ("169.254.169.254", "link-local"), ("127.0.0.1", "a loopback address")],
)
def test_allowed_but_unmapped_internal_addresses_are_refused(direct_proxy, host, why):
    resp = requests.get(f"http://{host}/latest/meta-data/", proxies=direct_proxy.proxies, timeout=60)
    assert resp.status_code == 403
    assert why in resp.text and "--egress-resolve" in resp.text
    assert last_record(direct_proxy, host)["decision"] == "denied"


def test_guard_refuses_a_mapping_outside_loopback_and_any_dns_lookup(direct_proxy):
    resp = requests.get("http://guarded.test/", proxies=direct_proxy.proxies, timeout=60)
    assert resp.status_code == 403 and "only upstreams in 127.0.0.0/8" in resp.text
    resp = requests.get("http://unmapped.example.test/", proxies=direct_proxy.proxies, timeout=60)
    assert resp.status_code == 403 and "no DNS lookups" in resp.text


def test_host_header_naming_another_host_is_refused(direct_proxy):
    resp = requests.get("http://plain.example.test/echo", headers={"Host": "evil.invalid"}, proxies=direct_proxy.proxies, timeout=60)
    assert resp.status_code == 403 and "the Host header names evil.invalid" in resp.text


def test_secret_is_injected_for_its_domain_in_header_url_and_body(direct_proxy, https_upstream):
    ph = direct_proxy.placeholder
    resp = requests.post(f"https://api.example.test/echo?key={ph}", data=f"token={ph}", proxies=direct_proxy.proxies,
                         verify=direct_proxy.ca, headers={"Authorization": f"Bearer {ph}"}, timeout=60)
    seen = https_upstream.seen[-1]
    assert seen["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert seen["path"] == f"/echo?key={SECRET}"
    assert seen["body"] == f"token={SECRET}"
    # The echo carries the real value back; the proxy turned it into the placeholder again.
    assert SECRET not in resp.text and resp.json()["headers"]["Authorization"] == f"Bearer {ph}"
    record = last_record(direct_proxy, "api.example.test")
    assert record["secrets"] == ["MY_TOKEN"] and record["warnings"] == []
    assert record["request_bytes"] == len(f"token={ph}")


def test_placeholder_sent_to_another_domain_is_left_and_warned_about(direct_proxy, https_upstream):
    ph = direct_proxy.placeholder
    get(direct_proxy, "https://other.test/echo", headers={"Authorization": f"Bearer {ph}"})
    seen = https_upstream.seen[-1]
    assert seen["headers"]["Authorization"] == f"Bearer {ph}"
    record = last_record(direct_proxy, "other.test")
    assert record["secrets"] == []
    assert record["warnings"] == ["placeholder of MY_TOKEN sent to other.test, which is not its domain; left as is"]


def test_large_streamed_upload_gets_the_secret_and_is_rechunked(direct_proxy, https_upstream):
    ph = direct_proxy.placeholder
    body = b"x" * (9 * 1024 * 1024) + ph.encode() + b"y" * 1000
    resp = requests.put("https://api.example.test/echo", data=body, proxies=direct_proxy.proxies, verify=direct_proxy.ca, timeout=120)
    assert resp.status_code == 200
    seen = https_upstream.seen[-1]
    headers = {k.lower(): v for k, v in seen["headers"].items()}
    assert headers.get("transfer-encoding") == "chunked" and "content-length" not in headers
    assert seen["body"].encode("latin-1") == body.replace(ph.encode(), SECRET.encode())
    record = last_record(direct_proxy, "api.example.test")
    assert record["secrets"] == ["MY_TOKEN"] and record["request_bytes"] == len(body)


@pytest.mark.parametrize("path", ["/reveal", "/reveal?gzip=1"])
def test_real_value_in_a_response_is_replaced_by_the_placeholder(direct_proxy, path):
    # other.test holds no secret: scrubbing applies to every response, not only the secret's domain.
    for host in ("api.example.test", "other.test"):
        resp = get(direct_proxy, f"https://{host}{path}")
        assert resp.status_code == 200
        assert resp.text == f"the token is {direct_proxy.placeholder}, keep it safe"
        assert resp.headers["x-token"] == direct_proxy.placeholder
        assert SECRET not in json.dumps(dict(resp.headers))


def test_scrubbing_sees_a_value_that_arrives_in_two_pieces(direct_proxy):
    resp = get(direct_proxy, "https://api.example.test/reveal-split")
    assert resp.content == b"a" * 50_000 + direct_proxy.placeholder.encode() + b"b" * 50_000


def test_raw_tcp_inside_an_allowed_connect_is_refused(direct_proxy):
    host, port = direct_proxy.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(b"CONNECT api.example.test:22 HTTP/1.1\r\nHost: api.example.test:22\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")
        sock.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        assert sock.recv(1024) == b""  # closed, nothing relayed
    records = [r for r in direct_proxy.synced_records() if r["method"] == "TCP"]
    assert records and records[-1]["decision"] == "denied" and "only HTTP and HTTPS" in records[-1]["reason"]


def test_no_record_ever_holds_the_real_value(direct_proxy):
    assert SECRET not in json.dumps(direct_proxy.synced_records())
