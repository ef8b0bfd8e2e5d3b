"""Benchmark: list a 1,000-skill registry and read one skill's files over MCP (``skillctl mcp
serve --registry DIR`` on stdio, driven by the ``mcp`` SDK's client as a host drives it) against
doing the same straight from the folder registry, in one run; and the server's peak memory.

Setup (not timed): N small skills (SKILL.md, a script, a reference; 3 files) published to a
folder registry. Each pass, alternating the two sides so machine noise hits both alike:

- folder: open the registry, list its skills, resolve and fetch one skill's bundle, read its
  files and hash each one (what a host needs: the listing, then one skill's verified bytes);
- mcp: launch the server (a fresh process, as a host launches it), initialize, ``skills/list``
  through every page (each entry carries every file's digest), then ``resources/read`` of every
  file of the same skill, each checked against the entry's size and digest. Then, in the same
  session, the listing and reads again (``warm``: entries already built by the server).

``mcp_server_rss_mb`` is the server's ``VmHWM`` (peak resident set) from ``/proc`` at the end of
its session. Medians over ``--reps`` passes. The last line is
``mcp_list_read_s=A folder_list_read_s=B mcp_vs_folder_ratio=C mcp_server_rss_mb=D mcp_start_s=E
mcp_warm_list_read_s=F`` (E: launch + initialize alone; F: the listing and reads again in the same
session).

    python bench/mcp_serve.py [--skills 1000] [--reps 3]

Not a test: nothing here asserts on time. Linux only for the memory figure (``/proc``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from pydantic import TypeAdapter

from skillctl.bundle import read_artifact
from skillctl.mcp.hosts import serve_args, skillctl_launcher
from skillctl.registry.local import LocalRegistry

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from bench_registry import make_registry  # noqa: E402 - the shared benchmark registry

REPO = Path(__file__).resolve().parents[1]
_ANY = TypeAdapter(dict[str, Any])


class _PageRequest(types.Request[types.PaginatedRequestParams, str]):
    pass


def _registry_path(root: Path, n: int) -> Path:
    make_registry(root, n, "benchmarking MCP servers").close()
    return root / "registry"


def folder_pass(path: Path, name: str) -> tuple[int, dict[str, str]]:
    reg = LocalRegistry(path)
    try:
        listed = len(reg.list_skills())
        rec = reg.resolve(name)
        files = read_artifact(reg.fetch(rec), rec.artifact_type, expected_name=name).files
        return listed, {rel: "sha256:" + hashlib.sha256(data).hexdigest() for rel, data in files.items()}
    finally:
        reg.close()


def _children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(entry))
    return out


def _vmhwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _list_and_read(client: Client, name: str) -> tuple[int, int, dict[str, str]]:
    skills, pages, cursor = [], 0, None
    while True:
        page = await client.session.send_request(
            _PageRequest(method="skills/list", params=types.PaginatedRequestParams(cursor=cursor)), _ANY)
        skills += page["skills"]
        pages += 1
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    (entry,) = [s for s in skills if s["uri"] == f"skill://{name}/SKILL.md"]
    digests = {}
    for res in entry["resources"]:
        (content,) = (await client.read_resource(res["uri"])).contents
        data = content.text.encode("utf-8") if hasattr(content, "text") else base64.b64decode(content.blob)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if len(data) != res["size"] or digest != res["digest"]:
            raise SystemExit(f"{res['uri']}: {len(data)} bytes {digest}, the entry says {res['size']} {res['digest']}")
        digests[res["uri"].removeprefix(f"skill://{name}/")] = digest
    return len(skills), pages, digests


def mcp_pass(path: Path, name: str) -> dict[str, Any]:
    launcher = skillctl_launcher(sys.argv[0], sys.executable)
    params = StdioServerParameters(command=launcher[0], args=[*launcher[1:], *serve_args(registry=str(path))],
                                   env={"PYTHONPATH": str(REPO)})  # the server runs this checkout's code

    async def go() -> dict[str, Any]:
        before = set(_children_of(os.getpid()))
        t0 = time.perf_counter()
        async with Client(params, read_timeout_seconds=600, cache=None) as client:
            started = time.perf_counter() - t0
            listed, pages, digests = await _list_and_read(client, name)
            cold = time.perf_counter() - t0
            t1 = time.perf_counter()
            await _list_and_read(client, name)
            warm = time.perf_counter() - t1
            (pid,) = set(_children_of(os.getpid())) - before
            rss = _vmhwm_mb(pid)
        return {"cold": cold, "started": started, "warm": warm, "listed": listed, "pages": pages, "digests": digests, "rss": rss}

    return anyio.run(go)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skills", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="skillctl-bench-mcp-"))
    try:
        print(f"publishing {args.skills} skills to a folder registry (setup)", file=sys.stderr)
        registry = _registry_path(tmp, args.skills)
        name = f"skill-{args.skills // 2:04}"
        folder_times, runs = [], []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            listed, folder_digests = folder_pass(registry, name)
            folder_times.append(time.perf_counter() - t0)
            run = mcp_pass(registry, name)
            if run["listed"] != listed or run["digests"] != folder_digests:
                raise SystemExit(f"the server listed {run['listed']} skills (folder: {listed}) or served other bytes for {name}")
            runs.append(run)
        mcp_s = statistics.median(r["cold"] for r in runs)
        warm_s = statistics.median(r["warm"] for r in runs)
        started_s = statistics.median(r["started"] for r in runs)
        folder_s = statistics.median(folder_times)
        rss = max(r["rss"] for r in runs)
        print(f"{args.skills} skills, {runs[0]['pages']} skills/list pages, {len(runs[0]['digests'])} files of {name} read; "
              f"{args.reps} reps, medians:", file=sys.stderr)
        print(f"  mcp    {mcp_s:7.3f} s  (launch + initialize + every page + reads; launch + initialize alone: "
              f"{started_s:.3f} s; the listing and reads again in that session: {warm_s:.3f} s)", file=sys.stderr)
        print(f"  folder {folder_s:7.3f} s  (open + list + fetch + read + hash)", file=sys.stderr)
        print(f"  server peak RSS {rss:.1f} MB", file=sys.stderr)
        print(f"mcp_list_read_s={mcp_s:.3f} folder_list_read_s={folder_s:.4f} mcp_vs_folder_ratio={mcp_s / folder_s:.1f} "
              f"mcp_server_rss_mb={rss:.1f} mcp_start_s={started_s:.3f} mcp_warm_list_read_s={warm_s:.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
