"""A real run's container behind the egress proxy: what it can reach, what it cannot, and what
it sees of secrets. Real engine, real agent image, real firewall rules, the real proxy process;
upstreams are the loopback servers of ``conftest.py`` (the loopback-only guard is on)."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from skillctl.egress.session import CA_IN_SANDBOX, EgressSession
from skillctl.sandbox import open_sandbox
from skillctl.sandbox.reaper import Owner
from skillctl.sandbox.settings import LABEL_MANAGED, LABEL_OWNER

from .conftest import SECRET
from .upstream import pattern_bytes

pytestmark = [pytest.mark.requires_docker]

FETCH = """
import gzip, hashlib, json, os, sys, urllib.request
url = sys.argv[1]
headers = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
try:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=120) as resp:
        h, n, head = hashlib.sha256(), 0, b""
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            if resp.headers.get("content-encoding") == "gzip":
                chunk = gzip.decompress(chunk)  # small test bodies: one read holds them whole
            head = head or chunk[:4096]
            h.update(chunk); n += len(chunk)
        print(json.dumps({"status": resp.status, "bytes": n, "sha256": h.hexdigest(),
                          "head": head.decode("latin-1"), "headers": dict(resp.headers)}))
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


class Run:
    def __init__(self, session: EgressSession, sandbox, records: list[dict], log: Path) -> None:
        self.session, self.sandbox, self.records, self.log = session, sandbox, records, log

    def fetch(self, url: str, headers: dict[str, str] | None = None) -> dict:
        self.sandbox.put_archive("/tmp", _tar("fetch.py", FETCH.encode()))
        args = f"'{url}'" + (f" '{json.dumps(headers)}'" if headers else "")
        result = self.sandbox.exec(f"python3 /tmp/fetch.py {args}", timeout_s=300)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)


def _tar(name: str, data: bytes, mode: int = 0o644) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(scope="module")
def run(tmp_path_factory, policy, resolve_specs, test_ca, agent_image, docker_client) -> Iterator[Run]:
    log = tmp_path_factory.mktemp("egress-run") / "egress.jsonl"
    records: list[dict] = []
    session = EgressSession(policy, resolve=resolve_specs, extra_ca=[test_ca[0]], log_path=log, on_record=records.append,
                            environ={"MY_TOKEN": SECRET}, client=docker_client)
    with session:
        with open_sandbox("docker", image=agent_image, client=docker_client, **session.sandbox_settings()) as sandbox:
            session.attach(sandbox)
            yield Run(session, sandbox, records, log)


def test_allowed_https_and_http_from_the_container(run, https_upstream, http_upstream):
    got = run.fetch("https://api.example.test/echo?from=container")
    assert got["status"] == 200, got
    assert json.loads(got["head"])["path"] == "/echo?from=container"
    assert run.fetch("http://plain.example.test/echo")["status"] == 200


def test_denied_domain_from_the_container(run):
    got = run.fetch("https://evil.invalid/")
    assert "403" in got["error"]
    assert run.session.sync()
    assert any(r["host"] == "evil.invalid" and r["decision"] == "denied" for r in run.records)


def test_secret_is_a_placeholder_inside_and_real_only_upstream_at_its_domain(run, https_upstream):
    placeholder = run.session.placeholders["MY_TOKEN"]
    env = run.sandbox.exec("env", timeout_s=30).stdout
    assert f"MY_TOKEN={placeholder}" in env and SECRET not in env
    result = run.sandbox.exec(
        "python3 -c \"import os, urllib.request; print(urllib.request.urlopen(urllib.request.Request("
        "'https://api.example.test/echo', headers={'Authorization': 'Bearer ' + os.environ['MY_TOKEN']})).read().decode())\"",
        timeout_s=120,
    )
    assert result.exit_code == 0, result.stderr
    assert https_upstream.seen[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in result.stdout and placeholder in result.stdout  # the echo came back scrubbed
    run.sandbox.exec(
        "python3 -c \"import os, urllib.request; urllib.request.urlopen(urllib.request.Request("
        "'https://other.test/echo', headers={'Authorization': 'Bearer ' + os.environ['MY_TOKEN']})).read()\"",
        timeout_s=120,
    )
    assert https_upstream.seen[-1]["headers"]["Authorization"] == f"Bearer {placeholder}"


def test_real_value_never_inside_the_container(run):
    # Every process's environment, as root, and a response that echoes the real value.
    result = run.sandbox.exec("cat /proc/[0-9]*/environ | tr '\\0' '\\n'", timeout_s=30, user="0:0")
    assert "MY_TOKEN=" in result.stdout and SECRET not in result.stdout
    got = run.fetch("https://api.example.test/reveal?gzip=1")
    assert SECRET not in json.dumps(got) and run.session.placeholders["MY_TOKEN"] in got["head"]


def test_secret_not_in_the_log_or_records(run):
    assert run.session.sync()
    assert run.records and SECRET not in json.dumps(run.records)
    text = run.log.read_text()
    assert '"secrets": ["MY_TOKEN"]' in text and SECRET not in text


def test_fifty_megabyte_download(run):
    size = 50 * 1024 * 1024
    got = run.fetch(f"https://files.example.test/bytes/{size}")
    import hashlib

    assert got["status"] == 200 and got["bytes"] == size
    assert got["sha256"] == hashlib.sha256(pattern_bytes(size)).hexdigest()
    assert run.session.sync()
    assert [r for r in run.records if r["path"] == f"/bytes/{size}"][-1]["response_bytes"] == size


def test_a_passthrough_domain_from_the_container_is_spliced_whole(run, https_upstream):
    # dl.example.test is in the policy's passthrough_domains: the container meets the upstream's
    # own certificate (its CA file holds the roots the proxy trusts upstream, --egress-ca too).
    import hashlib

    size = 20 * 1024 * 1024
    got = run.fetch(f"https://dl.example.test/bytes/{size}")
    assert got["status"] == 200 and got["bytes"] == size, got
    assert got["sha256"] == hashlib.sha256(pattern_bytes(size)).hexdigest()
    assert https_upstream.seen[-1]["sni"] == "dl.example.test"
    assert run.session.sync()
    record = [r for r in run.records if r.get("host") == "dl.example.test"][-1]
    assert record["mode"] == "passthrough" and record["decision"] == "allowed" and record["error"] is None
    assert record["path"] == "" and "path" in record["not_seen"] and record["response_bytes"] > size
    logged = [json.loads(line) for line in run.log.read_text().splitlines()]
    assert any(r.get("host") == "dl.example.test" and r["mode"] == "passthrough" for r in logged)
    assert "1 passthrough connection" in run.session.summary.line()


def test_ca_certificate_is_trusted_and_the_agent_cannot_change_it(run):
    result = run.sandbox.exec(f"ls -ln {CA_IN_SANDBOX}; echo x > {CA_IN_SANDBOX}; rm -f {CA_IN_SANDBOX}; "
                              f"mv /tmp/skillctl-egress /tmp/moved; test -s {CA_IN_SANDBOX} && echo still-there", timeout_s=30)
    assert result.stdout.split()[2:4] == ["0", "0"]  # owned by root
    assert "still-there" in result.stdout


def _host_ipv4_addresses() -> list[str]:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[3].split("/")[0] for line in out.splitlines()} - {"127.0.0.1"})


PROBE = """
import json, socket, sys, threading
targets = json.loads(sys.argv[1]); out = {}
def probe(t):
    host, port = t.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=8).close(); out[t] = "connected"
    except OSError as exc:
        out[t] = type(exc).__name__
threads = [threading.Thread(target=probe, args=(t,)) for t in targets]
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps(out))
"""


class Listener:
    """A TCP server on the host that counts the connections it accepts."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def test_direct_connections_from_the_container_fail(run):
    everywhere, loopback = Listener("0.0.0.0"), Listener("127.0.0.1")
    try:
        gateway = run.session.proxy_url.removeprefix("http://").rsplit(":", 1)[0]
        targets = [f"{gateway}:{everywhere.port}", f"{gateway}:{loopback.port}", "203.0.113.1:443"]
        targets += [f"{address}:{everywhere.port}" for address in _host_ipv4_addresses() if address != gateway]
        control = run.session.proxy_url.removeprefix("http://")
        run.sandbox.put_archive("/tmp", _tar("probe.py", PROBE.encode()))
        result = run.sandbox.exec(f"python3 /tmp/probe.py '{json.dumps(targets + [control])}'", timeout_s=120)
        outcome = json.loads(result.stdout)
        assert outcome.pop(control) == "connected"  # the proxy is the one thing it reaches
        assert outcome and all(v != "connected" for v in outcome.values()), outcome
        assert everywhere.accepted == 0 and loopback.accepted == 0
        # Each attempt is reported: the firewall logs it, the run reads it back.
        wanted = {(t.rsplit(":", 1)[0], int(t.rsplit(":", 1)[1])) for t in targets}

        def logged():
            seen = {(r["host"], r["port"]) for r in list(run.records) if r.get("reason", "").endswith("dropped by the firewall")}
            return wanted <= seen

        give_up = time.monotonic() + 60
        while not logged():
            assert time.monotonic() < give_up, f"not all direct attempts were logged: {wanted}"
            time.sleep(0.2)
    finally:
        everywhere.close()
        loopback.close()


def test_dns_goes_nowhere(run, docker_client):
    gateway = run.session.proxy_url.removeprefix("http://").rsplit(":", 1)[0]
    info = docker_client.api.inspect_container(run.sandbox.container_id)
    assert info["HostConfig"]["Dns"] == [gateway]
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind((gateway, 53))
    listener.settimeout(0.5)
    try:
        result = run.sandbox.exec("getent hosts exfiltrate.example.test", timeout_s=60)
        assert result.exit_code != 0
        with pytest.raises(socket.timeout):
            listener.recvfrom(512)  # the firewall dropped the query before it reached the host
    finally:
        listener.close()


def test_other_containers_cannot_use_the_runs_proxy(run, docker_client, agent_image):
    labels = {LABEL_MANAGED: "1", LABEL_OWNER: Owner.current().label()}
    other = docker_client.containers.run(agent_image, ["120"], detach=True, network_mode="bridge", labels=labels,
                                         user="1000:1000", cap_drop=["ALL"])
    try:
        host, port = run.session.proxy_url.removeprefix("http://").rsplit(":", 1)
        code, out = other.exec_run(
            ["python3", "-c", f"import socket; socket.create_connection(('{host}', {port}), timeout=8); print('connected')"]
        )
        assert b"connected" not in out and code != 0
    finally:
        other.remove(force=True)
