"""Benchmark: ``LocalRegistry.resolve`` among 10,000 published versions of one skill.

Fills a fresh local registry, then times ``resolve`` for several ranges (latest, ^N, ~N.M,
exact, ranges near the bottom, a range nothing matches) and, in the same run, two baselines:
the same ranges against a registry of 10 versions, and a bare ``SELECT 1`` round trip on the
registry's own connection. Prints p50/p95 and the ratios, last, as
``resolve_p50_ms=X versions=N`` where X is the worst p50 over all ranges. Target:
p50 <= 20 ms at 10,000 versions.

    python bench/resolve_latency.py [--versions 10000] [--reps 200]

The loader: the first version goes through ``publish`` (real blob, real skill row); the others
are inserted into the same ``versions`` table in one transaction, copying that row and changing
only the version columns. Publishing 10,000 bundles one by one would spend minutes in fsync and
measure nothing more: ``resolve`` reads only the index. The rows are what ``publish`` writes.

Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillctl.errors import NotFoundError
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder
from skillctl.versioning import SemVer

PRE = ("dev.1", "alpha.1", "beta.1", "rc.1", "rc.2")


def version_list(n: int) -> list[str]:
    """``n`` versions: for each major.minor, 45 patches and 5 pre-releases of the next patch."""
    out: list[str] = []
    major = 0
    while len(out) < n:
        for minor in range(20):
            out += [f"{major}.{minor}.{patch}" for patch in range(45)]
            out += [f"{major}.{minor}.45-{pre}" for pre in PRE]
        major += 1
    return out[:n]


def make_skill(root: Path, version: str) -> Path:
    folder = root / "bench-skill"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: bench-skill\ndescription: Benchmark skill; use it to time the registry.\n"
        f"metadata:\n  version: \"{version}\"\n---\n\n# Bench\n"
    )
    (folder / "scripts" / "run.sh").write_text("#!/bin/sh\necho ok\n")
    return folder


def fill(reg: LocalRegistry, versions: list[str], work: Path) -> None:
    first = reg.publish(prepare_folder(make_skill(work, versions[0])))
    c = reg.conn
    cols = [r[1] for r in c.execute("PRAGMA table_info(versions)")]
    row = dict(zip(cols, c.execute("SELECT * FROM versions WHERE skill_id = ?", (first.record.skill_id,)).fetchone()))
    rows = []
    for text in versions[1:]:
        sv = SemVer.parse(text)
        major, minor, patch, rank, num = sv.order
        rows.append({**row, "version": str(sv), "public": sv.public, "major": major, "minor": minor,
                     "patch": patch, "pre_rank": rank, "pre_num": num})
    placeholders = ", ".join(f":{col}" for col in cols)
    c.execute("BEGIN IMMEDIATE")
    c.executemany(f"INSERT INTO versions ({', '.join(cols)}) VALUES ({placeholders})", rows)
    c.execute("COMMIT")
    c.execute("ANALYZE")


def time_ns(fn, reps: int) -> list[float]:
    for _ in range(min(20, reps)):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def resolver(reg: LocalRegistry, ref: str, prereleases: bool = False):
    def go() -> None:
        try:
            reg.resolve(ref, prereleases=prereleases)
        except NotFoundError:
            pass

    return go


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    big_versions = version_list(args.versions)
    top_major = int(big_versions[-1].split(".")[0])
    ranges = [
        ("latest", False),
        ("latest (pre)", True),
        (f"^{top_major // 2}", False),
        (f"~{top_major // 3}.7", False),
        (f"{top_major // 2}.10.20", False),
        ("^0.0", False),
        (">=0.0.1 <0.0.4", False),
        (">=0.0.1 <=0.0.3 !=0.0.2", False),
        (f">={top_major + 1}", False),  # nothing matches: must not scan every row
        (f"<={top_major}.19.45-rc.2 >={top_major}.19.45-alpha.1", False),
    ]

    with tempfile.TemporaryDirectory(prefix="skillctl-bench-") as tmp:
        tmpdir = Path(tmp)
        t0 = time.perf_counter()
        big = LocalRegistry(tmpdir / "big")
        fill(big, big_versions, tmpdir / "src-big")
        load_s = time.perf_counter() - t0
        small = LocalRegistry(tmpdir / "small")
        fill(small, version_list(10), tmpdir / "src-small")
        count = big.conn.execute("SELECT COUNT(*) FROM versions").fetchone()[0]
        print(f"loaded {count} versions in {load_s:.1f} s; baseline registry: 10 versions", file=sys.stderr)

        select1 = time_ns(lambda: big.conn.execute("SELECT 1").fetchone(), args.reps)
        base_p50 = p(select1, 50)
        print(f"{'range':<38} {'p50 ms':>8} {'p95 ms':>8} {'10-ver p50':>10} {'x10-ver':>8} {'xSELECT1':>9}  result")
        worst = 0.0
        for text, pre in ranges:
            ref = "bench-skill" + ("" if text.startswith("latest") else f"@{text}")
            times = time_ns(resolver(big, ref, pre), args.reps)
            baseline = time_ns(resolver(small, ref, pre), args.reps)
            try:
                got = big.resolve(ref, prereleases=pre).version
            except NotFoundError:
                got = "(none)"
            p50, p95, b50 = p(times, 50), p(times, 95), p(baseline, 50)
            worst = max(worst, p50)
            print(f"{text:<38} {p50:8.3f} {p95:8.3f} {b50:10.3f} {p50 / b50:8.2f} {p50 / base_p50:9.0f}  {got}")
        print(f"SELECT 1 round trip p50: {base_p50 * 1000:.1f} us")
        big.close()
        small.close()
    print(f"resolve_p50_ms={worst:.3f} versions={count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
