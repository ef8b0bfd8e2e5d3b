"""Benchmark: publish and pull of N small skills through an OCI registry on loopback (Debian's
``docker-registry``, distribution 2.8, started here) against the folder registry, in one run.

Publish = ``prepare_folder`` + ``publish`` of each skill (the bundles are packed once, before
timing, so both sides time only the registry). Pull = a fresh client per pass (no caches), used
as one run (``with registry:``, as commands do), resolving ``NAME@^1`` and fetching the bundle,
digest verified, for every skill. Each phase is
run ``--reps`` times against fresh namespaces / folders, alternating OCI and local so machine
noise hits both alike; medians are reported. The last line is
``oci_publish_ratio=A oci_pull_ratio=B`` (OCI time / folder time; larger means OCI is slower).

    python bench/oci_vs_local.py [--skills 100] [--reps 3]

Not a test: nothing here asserts on time. Needs ``apt-get install docker-registry``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillctl.registry.local import LocalRegistry
from skillctl.registry.oci import OciRegistry
from skillctl.registry.prepare import PreparedBundle, prepare_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.oci.server import APT_PACKAGES, BINARY, DistributionServer  # noqa: E402 - the tests' server runner


def make_bundles(root: Path, n: int) -> list[PreparedBundle]:
    out = []
    for i in range(n):
        folder = root / f"skill-{i:03}"
        (folder / "scripts").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:03}\ndescription: Benchmark skill number {i}; use it when benchmarking registries.\n"
            f"metadata:\n  version: \"1.{i % 5}.0\"\n---\n\n# Skill {i}\n\nRun scripts/run.py.\n" + "Some instructions. " * 50,
            "utf-8",
        )
        (folder / "scripts" / "run.py").write_text("#!/usr/bin/env python3\nprint('ok')\n" + f"# {i}\n" * 40, "utf-8")
        (folder / "scripts" / "run.py").chmod(0o755)
        out.append(prepare_folder(folder))
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skills", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if not Path(BINARY).exists():
        print(f"docker-registry is not installed (apt-get install {APT_PACKAGES})", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="skillctl-bench-oci-"))
    server = DistributionServer(tmp / "server").start()
    try:
        bundles = make_bundles(tmp / "src", args.skills)
        refs = [f"{b.name}@^1" for b in bundles]
        times: dict[str, list[float]] = {k: [] for k in ("oci_publish", "local_publish", "oci_pull", "local_pull")}
        requests_per_publish = requests_per_pull = 0.0
        for rep in range(args.reps):
            url = server.url(f"bench{rep}")
            oci = OciRegistry.from_url(url, insecure=True)
            times["oci_publish"].append(timed(lambda: [oci.publish(b) for b in bundles]))
            requests_per_publish = oci.client.requests / len(bundles)
            oci.close()
            local_path = tmp / f"local{rep}"
            local = LocalRegistry(local_path)
            times["local_publish"].append(timed(lambda: [local.publish(b) for b in bundles]))
            local.close()

            def pull(reg) -> None:
                for ref in refs:
                    reg.fetch(reg.resolve(ref))

            with OciRegistry.from_url(url, insecure=True) as oci:  # one run, as a command pulls
                times["oci_pull"].append(timed(lambda: pull(oci)))
                requests_per_pull = oci.client.requests / len(bundles)
            local = LocalRegistry(local_path)
            times["local_pull"].append(timed(lambda: pull(local)))
            local.close()
        med = {k: statistics.median(v) for k, v in times.items()}
        n = len(bundles)
        print(f"{n} skills, {args.reps} reps, medians (per skill):")
        for side in ("publish", "pull"):
            o, l = med[f"oci_{side}"], med[f"local_{side}"]
            print(f"  {side:<8} oci {o:7.3f} s ({o / n * 1000:6.2f} ms)   local {l:7.3f} s ({l / n * 1000:6.2f} ms)")
        print(f"  HTTP requests per skill: publish {requests_per_publish:.1f}, pull {requests_per_pull:.1f}")
        print(f"oci_publish_ratio={med['oci_publish'] / med['local_publish']:.2f} oci_pull_ratio={med['oci_pull'] / med['local_pull']:.2f}")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
