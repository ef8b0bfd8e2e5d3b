"""Egress proxy cost: HTTPS from the container through the proxy vs from the host directly.

One HTTPS server on 127.0.0.1 (the tests' loopback upstream, under a CA made with openssl).
Direct: the host's Python talks to it. Proxied: the same client code runs in a real run's
container and goes through the egress proxy, twice, under two names mapped to that server with
--egress-resolve: ``api.example.test`` is intercepted (CONNECT, TLS interception, policy
checks, a placeholder secret configured so response scrubbing is on, upstream TLS);
``dl.example.test`` is a passthrough domain (CONNECT and SNI checked, TLS spliced through).
Nothing leaves the machine (the loopback-only guard is set).

The three clients take turns, five rounds (direct, intercepted, passthrough, direct, …), so a
machine that gets busier or quieter during the run weighs on all three alike.

- Latency: 200 GETs of a small body per client, on one kept-alive connection per round
  (connection set-up is paid once either way); overhead = p50(proxied) - p50(direct).
- Throughput: a 50 MB body, once per round, best of the 5 rounds per client; ratio = proxied
  MB/s / direct MB/s.

Informative, not on the last line: the *container ceiling*, a plain container on Docker's
default bridge downloading straight from a second copy of the server bound to that bridge's
gateway (no proxy, no run network): what the container's own path to the host allows, which
the direct baseline (the host talking to loopback) does not pay. Five downloads after the
rounds above, best of them; left out when the host does not let that container in. And the
*whole-machine CPU* each client's downloads cost per GB (``/proc/stat`` read by the client
around each download: every process and the kernel's network work, wherever they run), with
the bound it sets: on N cores passthrough cannot pass N / (its CPU per MB), as a fraction of
direct. Direct already fills both cores of a 2-core machine, so every CPU-second the relay's
extra TCP legs cost comes straight out of passthrough's throughput.

Last line: ``egress_overhead_ms_p50=X egress_throughput_ratio=R egress_passthrough_throughput_ratio=P
egress_passthrough_overhead_ms_p50=Y`` (targets: X <= 5, R >= 0.5; P >= 0.9, Y <= 1).

    python bench/egress.py [--requests 200] [--megabytes 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.egress.upstream import Upstream, make_test_ca  # noqa: E402 - the tests' loopback upstream

CLIENT = r"""
import http.client, json, os, socket, ssl, sys, time
host, port, proxy, n, size, downloads = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[7])
ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE") or sys.argv[6])
class Loopback(http.client.HTTPSConnection):
    # The host has no name for the test host: dial 127.0.0.1, verify the certificate for the name.
    def connect(self):
        self.sock = self._context.wrap_socket(socket.create_connection((os.environ.get("BENCH_TARGET", "127.0.0.1"), self.port), self.timeout),
                                              server_hostname=self.host)
def connect():
    if proxy:
        phost, pport = proxy.removeprefix("http://").rsplit(":", 1)
        conn = http.client.HTTPSConnection(phost, int(pport), context=ctx, timeout=300)
        conn.set_tunnel(host, port)
    else:
        conn = Loopback(host, port, context=ctx, timeout=300)
    return conn
def busy():
    # Whole-machine CPU seconds so far (user, nice, system, irq, softirq; /proc/stat is the
    # host's inside a container too), so the relay's kernel work counts wherever it runs.
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:8]]
        return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
conn, lat = connect(), []
for i in range(n + 5):
    t = time.perf_counter()
    conn.request("GET", "/echo")
    conn.getresponse().read()
    if i >= 5:
        lat.append(time.perf_counter() - t)
best, cpu = None, 0.0
for _ in range(downloads):
    b = busy()
    t = time.perf_counter()
    conn.request("GET", f"/bytes/{size}")
    resp, got = conn.getresponse(), 0
    while True:
        chunk = resp.read(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    assert got == size, got
    elapsed = time.perf_counter() - t
    after = busy()
    cpu = None if b is None or after is None or cpu is None else cpu + after - b
    best = elapsed if best is None else min(best, elapsed)
print(json.dumps({"latency_s": lat, "download_s": best, "cpu_s": cpu}))
"""


ROUNDS = 5


def container_ceiling(image: str, ca: Path, cert: Path, key: Path, size: int) -> float | None:
    """Best MB/s of ROUNDS downloads by a plain container straight from a server on the default
    bridge's gateway; None when there is no such bridge or the host refuses the connection."""
    import ipaddress

    import docker

    from skillctl.sandbox.client import docker_client
    from skillctl.sandbox.settings import LABEL_MANAGED

    client = docker_client()
    try:
        config = client.api.inspect_network("bridge")["IPAM"]["Config"][0]
        # Docker leaves Gateway out when it is the default, the subnet's first address.
        gateway = config.get("Gateway") or str(ipaddress.ip_network(config["Subnet"])[1])
    except (docker.errors.APIError, KeyError, IndexError, ValueError):
        return None
    server = Upstream(cert=cert, key=key, host=gateway)
    best = None
    try:
        for _ in range(ROUNDS):
            script = f'printf %s "$CA" > /tmp/ca.pem && python3 -c "$CLIENT" api.example.test {server.port} "" 5 {size} /tmp/ca.pem 1'
            # Detached, then waited for: run(remove=True) can lose the race for the logs.
            container = client.containers.run(image, ["-c", script], entrypoint=["sh"], network="bridge", detach=True,
                                              labels={LABEL_MANAGED: "1"},
                                              environment={"CA": ca.read_text(), "CLIENT": CLIENT, "BENCH_TARGET": gateway,
                                                           "SSL_CERT_FILE": ""})
            try:
                code = container.wait(timeout=600)["StatusCode"]
                out = container.logs(stdout=True, stderr=True)
            finally:
                container.remove(force=True)
            if code != 0:
                print(f"container ceiling not measured: {out.decode(errors='replace')[-200:]}", file=sys.stderr)
                return None
            elapsed = json.loads(out.decode().strip().splitlines()[-1])["download_s"]
            best = elapsed if best is None else min(best, elapsed)
    finally:
        server.stop()
    return size / best / 1e6 if best else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--megabytes", type=int, default=50)
    args = parser.parse_args()
    os.environ["SKILLCTL_EGRESS_LOOPBACK_ONLY"] = "1"

    import io
    import subprocess
    import tarfile

    from skillctl.egress.policy import parse_policy
    from skillctl.egress.session import EgressSession
    from skillctl.sandbox import open_sandbox
    from skillctl.sandbox.image import ensure_image

    size = args.megabytes * 1024 * 1024
    image = ensure_image(progress=lambda line: print(line, file=sys.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        ca, cert, key = make_test_ca(Path(tmp) / "ca")
        server = Upstream(cert=cert, key=key)
        try:
            policy = parse_policy({"type": "allowlist", "allowed_domains": ["api.example.test", "dl.example.test"],
                                   "domain_secrets": [{"domain": "api.example.test", "name": "BENCH_TOKEN", "value": "env:BENCH_TOKEN"}],
                                   "passthrough_domains": ["dl.example.test"]},
                                  origin="bench")
            session = EgressSession(policy, resolve=[f"{h}=127.0.0.1:{server.port}" for h in ("api.example.test", "dl.example.test")],
                                    extra_ca=[ca], environ={"BENCH_TOKEN": "bench-token-value-0123456789"})
            with session, open_sandbox("docker", image=image, **session.sandbox_settings()) as sandbox:
                session.attach(sandbox)
                buf = io.BytesIO()
                with tarfile.open(fileobj=buf, mode="w") as tar:
                    data = CLIENT.encode()
                    info = tarfile.TarInfo("client.py")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                sandbox.put_archive("/tmp", buf.getvalue())
                per_round = -(-args.requests // ROUNDS)
                rounds: dict[str, list[dict]] = {"direct": [], "api.example.test": [], "dl.example.test": []}
                for _ in range(ROUNDS):
                    direct = subprocess.run([sys.executable, "-c", CLIENT, "api.example.test", str(server.port), "",
                                             str(per_round), str(size), str(ca), "1"],
                                            capture_output=True, text=True, check=True, env={**os.environ, "SSL_CERT_FILE": ""})
                    rounds["direct"].append(json.loads(direct.stdout))
                    for host in ("api.example.test", "dl.example.test"):
                        result = sandbox.exec(f"python3 /tmp/client.py {host} 443 {session.proxy_url} {per_round} {size} - 1",
                                              timeout_s=900)
                        if not result.ok:
                            print(result.stderr, file=sys.stderr)
                            return 1
                        rounds[host].append(json.loads(result.stdout))
            print(session.summary.line(), file=sys.stderr)
            ceiling = container_ceiling(image, ca, cert, key, size)
        finally:
            server.stop()
    cpu_per_gb = {name: (sum(r["cpu_s"] for r in runs) / (len(runs) * size / 1e9) if all(r["cpu_s"] is not None for r in runs) else None)
                  for name, runs in rounds.items()}
    d, p, s = ({"latency_s": [x for r in runs for x in r["latency_s"]], "download_s": min(r["download_s"] for r in runs)}
               for runs in rounds.values())
    d50, p50, s50 = (statistics.median(x["latency_s"]) * 1000 for x in (d, p, s))
    d_mbs, p_mbs, s_mbs = (size / x["download_s"] / 1e6 for x in (d, p, s))
    print(f"latency p50: direct {d50:.2f} ms, intercepted {p50:.2f} ms, passthrough {s50:.2f} ms ({args.requests} GETs each)")
    print(f"{args.megabytes} MB download: direct {d_mbs:.0f} MB/s, intercepted {p_mbs:.0f} MB/s, passthrough {s_mbs:.0f} MB/s")
    if ceiling:
        print(f"container ceiling (a container on the default bridge, no proxy): {ceiling:.0f} MB/s = {ceiling / d_mbs:.2f} of direct; "
              f"passthrough = {s_mbs / ceiling:.2f} of it")
    if None not in cpu_per_gb.values():
        cores = len(os.sched_getaffinity(0))
        cd, cp, cs = cpu_per_gb.values()
        print(f"whole-machine CPU per GB downloaded (/proc/stat, {cores} cores): direct {cd:.2f} s, intercepted {cp:.2f} s, "
              f"passthrough {cs:.2f} s; with every core busy passthrough could reach at most "
              f"{cores / cs * 1000 / d_mbs:.2f} of direct")
    print(f"egress_overhead_ms_p50={p50 - d50:.2f} egress_throughput_ratio={p_mbs / d_mbs:.2f} "
          f"egress_passthrough_throughput_ratio={s_mbs / d_mbs:.2f} egress_passthrough_overhead_ms_p50={s50 - d50:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
