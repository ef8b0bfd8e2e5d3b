"""Benchmark: ``skillctl serve`` under load — 50 concurrent clients listing and downloading for
20 seconds against a registry of 1,000 skills.

Setup (not timed): N small skills (SKILL.md, a script, a reference) published to a folder
registry; a keys file with one read key; ``skillctl serve`` started as its own process (so its
memory can be read from /proc and the clients do not share its interpreter), with the access
log off. Each client holds one keep-alive connection (a minimal HTTP/1.1 client on asyncio, so
the client side costs little) and loops: list a page of skills (``GET /openai/v1/skills``, the
page after a random skill), then download a random skill's zip (``GET …/content``). Every
request's latency is recorded; an error is any answer other than 200, a failed connection, or
no answer within 30 s.

The baseline, measured in the same run: the same list-then-download pairs done in this process
straight on the registry library (no HTTP, one thread), reported as ``direct_rps``.

Memory: the server's resident set at start (after a warm-up request) and its peak (VmHWM) at
the end. The last line is ``serve_rps=A serve_p99_ms=B errors=N``.

``--slowloris N`` runs a slowloris beside the load: N connections (530 is past the server's
connection limit of 512) that send a request line and one header, then another header line
every 5 s, and never the blank line that ends the head. They come from 127.0.0.2 and up, 100 per
address (as many clients would), are all open before the load starts, and each one the server
closes is opened again a second later, as the slowloris tool does; ``slowloris_closed`` counts
those. The load must still see ``errors=0``.

    python bench/serve_load.py [--skills 1000] [--clients 50] [--seconds 20] [--slowloris 530]

Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skillctl.bundle import read_artifact, zip_bundle
from skillctl.registry.local import LocalRegistry
from skillctl.serve.keys import add_key



def _site_bench():  # type: ignore[no-untyped-def]
    """bench/site.py, whose 1,000 small skills this benchmark reuses (loaded by path: ``site``
    is also the name of a standard module)."""
    spec = importlib.util.spec_from_file_location("bench_site", Path(__file__).resolve().parent / "site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Connection:
    """One keep-alive HTTP/1.1 connection for GETs whose answers carry a Content-Length."""

    def __init__(self, host: str, port: int, key: str) -> None:
        self.host, self.port, self.key = host, port, key
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.key}\r\n\r\n".encode())
        await self.writer.drain()
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, body

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


REQUEST_TIMEOUT_S = 30  # an answer that takes longer is an error (a server that stops answering must not hang the benchmark)


async def client(host: str, port: int, key: str, ids: list[str], until: float, latencies: list[float], errors: list[str]) -> None:
    conn = Connection(host, port, key)
    rng = random.Random()
    try:
        while time.monotonic() < until:
            for path in (f"/openai/v1/skills?limit=20&after={rng.choice(ids)}", f"/openai/v1/skills/{rng.choice(ids)}/content"):
                started = time.perf_counter()
                try:
                    status, _ = await asyncio.wait_for(conn.get(path), timeout=REQUEST_TIMEOUT_S)
                except (OSError, asyncio.IncompleteReadError, ValueError, asyncio.TimeoutError) as exc:
                    errors.append(f"{path}: {exc!r}")
                    await conn.close()
                    continue
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    errors.append(f"{path}: HTTP {status}")
    finally:
        await conn.close()


SLOW_HEAD = b"GET /openai/v1/skills HTTP/1.1\r\nHost: x\r\n"


async def slow_connection(host: str, port: int, source: str, opened: asyncio.Event, closed: list[int]) -> None:
    """One slowloris connection, opened again a second after the server closes it, until cancelled."""
    while True:
        writer = None
        try:
            reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
            writer.write(SLOW_HEAD)
            await writer.drain()
            opened.set()
            while True:
                try:
                    if not await asyncio.wait_for(reader.read(4096), timeout=5):
                        break  # the server closed it (with a 408 or without a word)
                except asyncio.TimeoutError:
                    writer.write(b"X-Slow: 1\r\n")
                    await writer.drain()
        except OSError:
            pass
        finally:
            if writer is not None:
                writer.close()
        closed[0] += 1
        await asyncio.sleep(1)


async def load(host: str, port: int, key: str, ids: list[str], clients: int, seconds: float,
               slowloris: int = 0) -> tuple[list[float], list[str], float, int]:
    latencies: list[float] = []
    errors: list[str] = []
    closed = [0]
    opened = [asyncio.Event() for _ in range(slowloris)]
    slow = [asyncio.create_task(slow_connection(host, port, f"127.0.0.{2 + i // 100}", opened[i], closed))
            for i in range(slowloris)]
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in opened)), timeout=60)  # all held before the load
    started = time.monotonic()
    until = started + seconds
    await asyncio.gather(*(client(host, port, key, ids, until, latencies, errors) for _ in range(clients)))
    elapsed = time.monotonic() - started
    for task in slow:
        task.cancel()
    await asyncio.gather(*slow, return_exceptions=True)
    return latencies, errors, elapsed, closed[0]


def direct_rps(registry: Path, ids: list[str], seconds: float) -> float:
    """List-then-download pairs on the registry library in this process (no HTTP)."""
    rng = random.Random(1)
    done = 0
    with LocalRegistry(registry) as reg:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            skills = sorted(reg.list_skills(), key=lambda s: (s.created_at, s.id))
            after = [s.id for s in skills].index(rng.choice(ids))
            _ = skills[after + 1 : after + 21]
            rec = reg.resolve_record(rng.choice(ids))
            zip_bundle(read_artifact(reg.fetch(rec.resolved()), rec.artifact_type, expected_name=rec.name))
            done += 2
    return done / seconds


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def wait_for_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("skillctl serve: http"):
            return line.split()[2]
    raise RuntimeError(f"skillctl serve exited ({proc.wait()}) before printing its URL")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=4, help="the server's registry worker threads")
    parser.add_argument("--slowloris", type=int, default=0, metavar="N", help="half-open connections held beside the load")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="skillctl-serve-bench-"))
    proc = None
    try:
        print(f"publishing {args.skills} skills…", file=sys.stderr)
        _site_bench().make_registry(root, args.skills).close()
        key, _ = add_key(root / "keys.json", "bench", frozenset({"read"}))
        own = Path(sys.executable).parent / "skillctl"  # this interpreter's (the venv's), else the one on PATH
        skillctl = str(own) if own.exists() else shutil.which("skillctl") or "skillctl"
        proc = subprocess.Popen(
            [skillctl, "serve", "--registry", str(root / "registry"), "--keys", str(root / "keys.json"), "--port", "0",
             "--threads", str(args.threads), "--no-access-log"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )
        url = wait_for_url(proc)
        host, port = url.split("//", 1)[1].rsplit(":", 1)

        async def warm() -> list[str]:
            conn = Connection(host, int(port), key)
            _, body = await conn.get("/openai/v1/skills?limit=100")
            ids = [s["id"] for s in json.loads(body)["data"]]
            while json.loads(body)["has_more"]:
                _, body = await conn.get(f"/openai/v1/skills?limit=100&after={ids[-1]}")
                ids += [s["id"] for s in json.loads(body)["data"]]
            await conn.close()
            return ids

        ids = asyncio.run(warm())
        rss_start = status_kib(proc.pid, "VmRSS")
        beside = f" beside a slowloris of {args.slowloris}" if args.slowloris else ""
        print(f"{len(ids)} skills served at {url}; {args.clients} clients for {args.seconds:g}s{beside}…", file=sys.stderr)
        latencies, errors, elapsed, slow_closed = asyncio.run(
            load(host, int(port), key, ids, args.clients, args.seconds, args.slowloris))
        peak = status_kib(proc.pid, "VmHWM")
        baseline = direct_rps(root / "registry", ids, min(args.seconds, 5.0))
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                print("error: skillctl serve did not stop within 120 s of SIGTERM; killed", file=sys.stderr)
                proc.kill()
                proc.wait()
        shutil.rmtree(root, ignore_errors=True)

    for line in errors[:5]:
        print(f"error: {line}", file=sys.stderr)
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000 if ordered else 0.0
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000 if ordered else 0.0
    rps = len(latencies) / elapsed
    print(f"requests={len(latencies)} seconds={elapsed:.1f} p50_ms={p50:.1f} clients={args.clients} skills={args.skills}")
    print(f"direct_rps={baseline:.0f} (the same pairs on the registry library, one thread, no HTTP) serve/direct={rps / baseline:.2f}")
    print(f"server_rss_start_mb={rss_start / 1024:.0f} server_peak_rss_mb={peak / 1024:.0f}")
    if args.slowloris:
        print(f"slowloris={args.slowloris} slowloris_closed={slow_closed} (half-open connections the server closed, each opened again)")
    print(f"serve_rps={rps:.0f} serve_p99_ms={p99:.0f} errors={len(errors)}")
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
