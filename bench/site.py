"""Benchmark: build a well-known site for N skills, then lock and install K of them from it over
a loopback HTTP server, next to the same lock and install from the folder registry, in one run.

Setup (not timed): N small skills (SKILL.md, a script, a reference) published to a folder
registry. ``site_build_s`` is ``build_site`` of the whole registry into an empty folder (every
archive packed, every document validated against the schema and written). The site is then
served by the tests' static server (``tests/wellknown/server.py``: a ``http.server`` thread).
Install = ``lock_skills`` of K skills (``NAME@^1``) plus ``install_locked`` into an empty folder, with
a fresh client and an empty cache each pass; ``pull_per_skill_ms`` is the same lock and install
against the folder registry itself (the baseline: no HTTP at all). Passes alternate site and
folder so machine noise hits both alike; medians are reported. The last line is
``site_build_s=A site_install_per_skill_ms=B pull_per_skill_ms=C``.

    python bench/site.py [--skills 1000] [--install 100] [--reps 3]

Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillctl.project.registry_lock import install_locked, lock_skills
from skillctl.registry.wellknown import WellKnownRegistry
from skillctl.registry.wellknown.site import build_site

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
from bench_registry import make_registry  # noqa: E402 - the shared benchmark registry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from wellknown.server import SiteServer  # noqa: E402 - the tests' static server


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skills", type=int, default=1000)
    ap.add_argument("--install", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="skillctl-bench-site-"))
    try:
        print(f"publishing {args.skills} skills to a folder registry (setup)", file=sys.stderr)
        registry = make_registry(tmp, args.skills, "benchmarking skill sites")
        t0 = time.perf_counter()
        report = build_site(tmp / "site", registry)
        build_s = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in (tmp / "site").rglob("*") if p.is_file())
        print(f"site: {report.skills} skills, {len(report.written)} files, {size / 1e6:.1f} MB in {build_s:.2f} s", file=sys.stderr)
        t0 = time.perf_counter()
        again = build_site(tmp / "site", registry)
        rebuild_s = time.perf_counter() - t0
        assert again.written == (), "an unchanged registry must change no byte"
        step = max(1, args.skills // args.install)
        wanted = {f"skill-{i:04}": "^1" for i in range(0, step * args.install, step)}
        k = len(wanted)
        site_times, folder_times, requests = [], [], 0
        with SiteServer(tmp / "site") as server:
            for rep in range(args.reps):
                site = WellKnownRegistry.from_url(server.url, insecure=True, cache_dir=str(tmp / f"cache{rep}"))
                t0 = time.perf_counter()
                install_locked(lock_skills(wanted, site), site, tmp / f"site-out{rep}")
                site_times.append(time.perf_counter() - t0)
                requests = site.client.http.requests
                site.close()
                t0 = time.perf_counter()
                install_locked(lock_skills(wanted, registry), registry, tmp / f"folder-out{rep}")
                folder_times.append(time.perf_counter() - t0)
        site_ms = statistics.median(site_times) / k * 1000
        folder_ms = statistics.median(folder_times) / k * 1000
        print(f"{args.skills} skills on the site; lock + install of {k}, {args.reps} reps, medians:", file=sys.stderr)
        print(f"  rebuild of the unchanged site: {rebuild_s:.2f} s (no byte written)", file=sys.stderr)
        print(f"  site   {site_ms:7.2f} ms per skill ({requests / k:.1f} HTTP requests per skill)", file=sys.stderr)
        print(f"  folder {folder_ms:7.2f} ms per skill", file=sys.stderr)
        registry.close()
        print(f"site_build_s={build_s:.2f} site_install_per_skill_ms={site_ms:.2f} pull_per_skill_ms={folder_ms:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
