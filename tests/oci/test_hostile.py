"""Hostile registries on loopback (``hostile.Hostile``): floods, trickles, silent servers,
redirect tricks, deeply nested JSON, token realms that would take the user's password
elsewhere, and tags by the thousand whose manifests are gone. Each attack ends in one line
naming the registry, in bounded time and memory, and credentials never leave for another host
or over plain HTTP."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.errors import RegistryError
from skillctl.registry.oci import OciRegistry
from skillctl.registry.oci.backend import MAX_MISSING
from skillctl.registry.oci.client import CATALOG_LIMITS, MAX_REDIRECTS, TAG_LIMITS

from .conftest import PASSWORD, USER
from .hostile import Hostile, make_cert, not_found, send, send_json, trickle

DEADLINE_S = 2.0  # short, so that a stuck exchange ends quickly; the trickles below last far longer
TAGS = "/v2/ns/demo/tags/list"


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def open_reg(server: Hostile, **kwargs) -> OciRegistry:
    kwargs.setdefault("insecure", server.scheme == "http")
    kwargs.setdefault("deadline_s", 30.0)
    return OciRegistry.from_url(server.url(), backoff_s=0.01, **kwargs)


def tags_then(manifest_answer):
    """A registry whose demo has one version, 1.0.0, whose manifest is answered by ``manifest_answer``."""

    def answer(h) -> None:
        if h.path.startswith(TAGS):
            send_json(h, 200, {"name": "ns/demo", "tags": ["1.0.0"]})
        elif "/manifests/" in h.path:
            manifest_answer(h)
        else:
            not_found(h)

    return answer


# ------------------------------------------------------------------------- tag-list floods


def paged(page, last: int):
    """Tag-list pages ``page(n)`` (a dict), each linking to the next, until page ``last``."""

    def answer(h) -> None:
        if not h.path.startswith(TAGS):
            return not_found(h)
        n = int(re.search(r"[?&]p=(\d+)", h.path).group(1)) if "p=" in h.path else 1
        headers = {"Link": f'<{TAGS}?n=1000&p={n + 1}>; rel="next"'} if n < last else {}
        send_json(h, 200, page(n), headers)

    return answer


def test_tag_pages_of_megabytes_forever_stop_at_the_total_byte_cap() -> None:
    pad = "x" * (1024 * 1024)
    with Hostile(paged(lambda n: {"name": "ns/demo", "tags": [], "padding": pad}, last=40)) as server:
        with pytest.raises(RegistryError) as exc:
            open_reg(server).versions("demo")
    text = one_line(exc)
    assert f"registry {server.host} answered the tags of ns/demo with more than 8 MiB over" in text and "refusing" in text
    assert len(server.requests_to(TAGS)) <= 9  # ~1 MiB a page: stopped just past 8 MiB, not after 40


def test_tag_pages_with_too_many_entries_are_refused() -> None:
    with Hostile(paged(lambda n: {"name": "ns/demo", "tags": [f"t{n}-{i}" for i in range(1000)]}, last=30)) as server:
        with pytest.raises(RegistryError) as exc:
            open_reg(server).versions("demo")
    assert f"lists more than {TAG_LIMITS.entries} entries in the tags of ns/demo" in one_line(exc)
    assert len(server.requests_to(TAGS)) == TAG_LIMITS.entries // 1000 + 1


def test_tag_pages_that_never_end_are_refused_at_the_page_cap() -> None:
    with Hostile(paged(lambda n: {"name": "ns/demo", "tags": []}, last=300)) as server:
        with pytest.raises(RegistryError) as exc:
            open_reg(server).versions("demo")
    assert f"kept paginating the tags of ns/demo past {TAG_LIMITS.pages} pages; refusing" in one_line(exc)
    assert len(server.requests_to(TAGS)) == TAG_LIMITS.pages


def test_a_catalog_flood_is_refused_too() -> None:
    # list and verify page through the catalog the same way; its bounds are wider (every team's
    # repositories are in it), and still bounds
    catalog = "/v2/_catalog"

    def answer(h) -> None:
        if not h.path.startswith(catalog):
            return not_found(h)
        n = int(re.search(r"[?&]p=(\d+)", h.path).group(1)) if "p=" in h.path else 1
        names = [f"other{n}/r{i}" for i in range(5000)]
        send_json(h, 200, {"repositories": names}, {"Link": f'<{catalog}?n=1000&p={n + 1}>; rel="next"'} if n < 30 else {})

    with Hostile(answer) as server:
        with pytest.raises(RegistryError) as exc:
            open_reg(server).list_skills()
    assert f"lists more than {CATALOG_LIMITS.entries} entries in its catalog" in one_line(exc)
    assert len(server.requests_to(catalog)) == CATALOG_LIMITS.entries // 5000 + 1


def test_the_cli_reports_a_tag_flood_in_one_line() -> None:
    with Hostile(paged(lambda n: {"name": "ns/demo", "tags": [], "padding": "y" * (1024 * 1024)}, last=40)) as server:
        result = CliRunner().invoke(cli, ["versions", "demo", "--registry", server.url(), "--insecure"])
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and "more than 8 MiB" in result.output and "Traceback" not in result.output


# ---------------------------------------------------------------------- total deadlines


def test_a_manifest_trickled_byte_by_byte_hits_the_total_deadline() -> None:
    body = json.dumps({"schemaVersion": 2, "padding": "z" * 100}).encode()

    def slow(h) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        trickle(h, body, 0.25, server.stop)  # ~35 s in all; each byte well inside any read timeout

    with Hostile(tags_then(slow)) as server:
        reg = open_reg(server, deadline_s=DEADLINE_S)
        with pytest.raises(RegistryError) as exc:
            reg.versions("demo")
    text = one_line(exc)
    assert text.startswith(f"registry {server.host} timed out on reading manifest ns/demo:1.0.0: no complete answer within the 2 s deadline")
    assert "(reading the body)" in text and "SKILLCTL_REGISTRY_TIMEOUT" in text


def test_headers_trickled_line_by_line_hit_the_total_deadline() -> None:
    def slow(h) -> None:
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")
        lines = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"a" * 20) for i in range(60))
        trickle(h, lines + b"Content-Length: 0\r\n\r\n", 0.02, server.stop)  # ~35 s of headers

    with Hostile(tags_then(slow)) as server:
        with pytest.raises(RegistryError) as exc:
            open_reg(server, deadline_s=DEADLINE_S).versions("demo")
    text = one_line(exc)
    assert f"registry {server.host} timed out on reading manifest ns/demo:1.0.0" in text
    assert "(waiting for the status line and headers)" in text


def test_a_silent_server_costs_one_deadline_not_one_per_retry() -> None:
    def silent(h) -> None:
        server.stop.wait(20)  # says nothing, then hangs up: bounded even for a client without a deadline
        h.close_connection = True

    with Hostile(silent) as server:
        reg = open_reg(server, deadline_s=DEADLINE_S, attempts=3)
        with pytest.raises(RegistryError) as exc:
            reg.versions("demo")
    assert f"registry {server.host} timed out on the tags of ns/demo" in one_line(exc)
    # the retries share the budget: the first attempt used it all, so there was no second one
    assert reg.client.requests == 1 and len(server.seen) == 1


def test_the_deadline_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    def silent(h) -> None:
        server.stop.wait(20)
        h.close_connection = True

    monkeypatch.setenv("SKILLCTL_REGISTRY_TIMEOUT", "1.5")
    with Hostile(silent) as server:
        result = CliRunner().invoke(cli, ["versions", "demo", "--registry", server.url(), "--insecure"])
    assert result.exit_code == 1, result.output
    assert "within the 1.5 s deadline" in result.output and result.output.count("\n") == 1
    monkeypatch.setenv("SKILLCTL_REGISTRY_TIMEOUT", "soon")
    result = CliRunner().invoke(cli, ["versions", "demo", "--registry", "oci://127.0.0.1:9/ns", "--insecure"])
    assert result.exit_code == 1 and "SKILLCTL_REGISTRY_TIMEOUT='soon' is not a positive number of seconds" in result.output


MiB = 1024 * 1024


def uploads(put_answer):
    """A registry that starts blob uploads and lets ``put_answer`` take the PUT of the bytes."""

    def answer(h) -> None:
        if h.command == "POST":
            return send(h, 202, b"", {"Location": "/v2/ns/demo/blobs/uploads/u1?_state=x"})
        if h.command == "PUT":
            return put_answer(h)
        not_found(h)

    return answer


def test_a_slow_but_steady_upload_is_not_cut_short() -> None:
    # 40 MiB read 1 MiB at a time: more than loopback buffers hold, so sending lasts for seconds —
    # longer than the connect timeout urllib3 would otherwise apply to the whole send
    data = bytes(40 * MiB)

    def slow_reader(h) -> None:
        left = int(h.headers["Content-Length"])
        while left > 0:
            if server.stop.wait(0.3):
                return
            left -= len(h.rfile.read(min(left, MiB)))
        send(h, 201, b"")

    with Hostile(uploads(slow_reader), read_bodies=False) as server:
        client = open_reg(server, deadline_s=300).client
        assert client.push_blob("ns/demo", data, "sha256:" + hashlib.sha256(data).hexdigest(), check_exists=False)


def test_an_upload_nobody_reads_hits_the_deadline() -> None:
    data = bytes(40 * MiB)

    def deaf(h) -> None:
        server.stop.wait(30)
        h.close_connection = True

    with Hostile(uploads(deaf), read_bodies=False) as server:
        client = open_reg(server, deadline_s=DEADLINE_S).client
        with pytest.raises(RegistryError) as exc:
            client.push_blob("ns/demo", data, "sha256:" + hashlib.sha256(data).hexdigest(), check_exists=False)
    text = one_line(exc)
    assert f"registry {server.host} timed out on uploading blob sha256:" in text and "(sending the request)" in text


# ------------------------------------------------------------------ redirects and links


def redirecting(location_for):
    def answer(h) -> None:
        target = location_for(h.path)
        if target is None:
            return not_found(h)
        send(h, 307, b"", {"Location": target})

    return answer


@pytest.mark.parametrize(
    "location_for, says",
    [
        (lambda p: "/v2/loop/b" if p != "/v2/loop/b" else TAGS + "?n=1000", "redirected the tags of ns/demo in a loop"),
        (lambda p: f"/v2/hop/{int(p.rsplit('/', 1)[1]) + 1 if '/hop/' in p else 1}", f"more than {MAX_REDIRECTS} times"),
        (lambda p: "file:///etc/passwd", "to a file URL (file:///etc/passwd); only http(s) URLs are followed"),
        (lambda p: "http://[::1", "to a malformed URL 'http://[::1'"),
        (lambda p: "http://127.0.0.1:99999/x", "to a malformed URL"),
        (lambda p: "http://127.0.0.1/a b", "to a malformed URL"),
    ],
    ids=["loop", "too-many", "file-scheme", "bad-ipv6", "bad-port", "space"],
)
def test_hostile_redirects_are_one_line(location_for, says: str) -> None:
    with Hostile(redirecting(location_for)) as server:
        with pytest.raises(RegistryError) as exc:
            open_reg(server).versions("demo")
    text = one_line(exc)
    assert text.startswith(f"registry {server.host} ") and says in text
    assert len(server.seen) <= MAX_REDIRECTS + 1


def test_a_next_page_link_to_a_file_url_is_refused() -> None:
    def answer(h) -> None:
        send_json(h, 200, {"name": "ns/demo", "tags": ["1.0.0"]}, {"Link": '<file:///etc/passwd>; rel="next"'})

    with Hostile(answer) as server:
        with pytest.raises(RegistryError) as exc:
            open_reg(server).versions("demo")
    assert "sent a next-page link for the tags of ns/demo to a file URL" in one_line(exc)


@pytest.mark.parametrize("where", ["tags", "manifest"])
def test_json_nested_too_deeply_is_one_line(where: str) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000  # 400 KB: under every size cap, far past the parser's recursion limit

    def answer(h) -> None:
        if h.path.startswith(TAGS):
            send_json(h, 200, b'{"tags":' + deep + b"}" if where == "tags" else {"tags": ["1.0.0"]})
        else:
            send_json(h, 200, b'{"schemaVersion":2,"x":' + deep + b"}", {"Content-Type": "application/vnd.oci.image.manifest.v1+json"})

    with Hostile(answer) as server:
        with pytest.raises(RegistryError) as exc:
            open_reg(server).versions("demo")
    assert "nested too deeply" in one_line(exc)


# ------------------------------------------------------------------------- token realms


@pytest.fixture
def tls_cert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    pair = make_cert(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pair[0]))
    return pair


def bearer(realm: str):
    def answer(h) -> None:
        if h.headers.get("Authorization") == "Bearer granted":
            return send_json(h, 200, {"name": "ns/demo", "tags": []}) if h.path.startswith(TAGS) else not_found(h)
        send_json(h, 401, {"errors": [{"code": "UNAUTHORIZED"}]},
                  {"WWW-Authenticate": f'Bearer realm="{realm}",service="hostile",scope="repository:ns/demo:pull"'})

    return answer


def token_service(h) -> None:
    send_json(h, 200, {"token": "granted"})


@pytest.mark.parametrize(
    "registry_tls, realm_bind, realm_tls, insecure, allowed",
    [
        (True, "127.0.0.2", False, False, False),  # TLS registry, realm on another host over plain HTTP
        (True, "127.0.0.1", False, False, False),  # its own host, but plain HTTP was never asked for
        (False, "127.0.0.2", False, True, False),  # --insecure does not extend to other hosts
        (False, "127.0.0.1", False, True, True),  # its own host, plain HTTP asked for: as with a loopback registry
        (True, "127.0.0.2", True, False, True),  # HTTPS realm on another host: what Docker does
    ],
    ids=["tls-registry-http-realm-elsewhere", "tls-registry-http-realm-same-host", "insecure-http-realm-elsewhere",
         "insecure-http-realm-same-host", "https-realm-elsewhere"],
)
def test_credentials_go_to_a_token_realm_only_over_https_or_to_the_registry_itself(
    tls_cert, registry_tls: bool, realm_bind: str, realm_tls: bool, insecure: bool, allowed: bool
) -> None:
    with Hostile(token_service, bind=realm_bind, tls=tls_cert if realm_tls else None) as tokens:
        realm = f"{tokens.base}/token"
        with Hostile(bearer(realm), tls=tls_cert if registry_tls else None) as server:
            reg = open_reg(server, insecure=insecure, username=USER, password=PASSWORD)
            if allowed:
                with pytest.raises(RegistryError, match="no skill 'demo'"):  # an empty tag list, read with the token
                    reg.versions("demo")
                (seen,) = tokens.seen
                assert seen.headers["Authorization"].startswith("Basic ")
                return
            with pytest.raises(RegistryError) as exc:
                reg.versions("demo")
    text = one_line(exc)
    assert f"registry {server.host} asks for the credentials of '{USER}'" in text and f"sent to {realm} over plain HTTP" in text
    assert "refusing" in text and PASSWORD not in text
    assert tokens.seen == []  # not even a connection attempt carrying the password


def test_an_anonymous_token_may_come_over_plain_http(tls_cert) -> None:
    with Hostile(token_service, bind="127.0.0.2") as tokens:
        with Hostile(bearer(f"{tokens.base}/token"), tls=tls_cert) as server:
            with pytest.raises(RegistryError, match="no skill 'demo'"):
                open_reg(server).versions("demo")
    (seen,) = tokens.seen
    assert "Authorization" not in seen.headers  # nothing secret was there to send


def test_the_registry_password_never_follows_a_redirect_to_another_host(tmp_path: Path) -> None:
    def elsewhere(h) -> None:
        send_json(h, 200, {"name": "ns/demo", "tags": []})

    with Hostile(elsewhere, bind="127.0.0.2") as other:
        def answer(h) -> None:
            if "Authorization" not in h.headers:
                return send_json(h, 401, {"errors": []}, {"WWW-Authenticate": 'Basic realm="r"'})
            send(h, 307, b"", {"Location": f"{other.base}{h.path}"})

        with Hostile(answer) as server:
            with pytest.raises(RegistryError, match="no skill 'demo'"):
                open_reg(server, username=USER, password=PASSWORD).versions("demo")
    assert other.seen and all("Authorization" not in s.headers for s in other.seen)
    assert any("Authorization" in s.headers for s in server.seen)


def test_a_redirect_from_https_to_plain_http_is_refused(tls_cert) -> None:
    with Hostile(lambda h: send_json(h, 200, {"tags": []}), bind="127.0.0.2") as plain:
        with Hostile(redirecting(lambda p: f"{plain.base}{p}"), tls=tls_cert) as server:
            with pytest.raises(RegistryError) as exc:
                open_reg(server).versions("demo")
    assert "to plain HTTP" in one_line(exc) and "from HTTPS; refusing" in str(exc.value)
    assert plain.seen == []


# ---------------------------------------------------------------- many tags, no manifests


def test_thousands_of_tags_whose_manifests_404_cost_a_bounded_number_of_requests() -> None:
    tags = [f"1.{i}.0" for i in range(5000)]

    def answer(h) -> None:
        if h.path.startswith(TAGS):
            send_json(h, 200, {"name": "ns/demo", "tags": tags})
        else:
            not_found(h)

    with Hostile(answer) as server:
        reg = open_reg(server)
        with pytest.raises(RegistryError) as exc:
            reg.versions("demo")
        text = one_line(exc)
        assert f"lists more than {MAX_MISSING} tags or repositories under ns that answer 'not found'" in text
        assert len(server.requests_to("/manifests/")) == MAX_MISSING + 1
        # the budget is per command: the next command starts afresh, and resolving reads newest first
        with pytest.raises(RegistryError, match="answer 'not found'"):
            reg.resolve("demo@^1")
        assert len(server.requests_to("/manifests/")) == 2 * (MAX_MISSING + 1)


def test_a_few_vanished_tags_are_skipped_quietly() -> None:
    def answer(h) -> None:
        if h.path.startswith(TAGS):
            return send_json(h, 200, {"name": "ns/demo", "tags": [f"1.{i}.0" for i in range(MAX_MISSING)]})
        not_found(h)

    with Hostile(answer) as server:
        assert open_reg(server).versions("demo") == []  # every tag vanished, but within the budget
    assert len(server.requests_to("/manifests/")) == MAX_MISSING
