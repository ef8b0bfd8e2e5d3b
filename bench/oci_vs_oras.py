"""Benchmark: skillctl's OCI client against the ORAS Python SDK (PyPI ``oras``) on the same
loopback registry (Debian's ``docker-registry``, distribution 2.8, started here) and the same
N skills, in one run.

Pull: skillctl resolves each skill by exact pin (``NAME@VERSION``), fetches the bundle (digest
verified) and writes it to a file; ``oras`` pulls the same artifacts, by the same tags, which
writes each layer to a file too. A fresh client on each side per round (no caches carried over:
each side starts with a new connection pool). Publish: skillctl ``publish`` of the prepared
bundles (packed before timing) into a fresh namespace against ``oras push`` of the same bundle
files, one artifact each, into another (publishing costs seconds a round, so it has fewer rounds).
Rounds alternate which side goes first, so machine noise hits both alike; medians are reported. The last line is ``oci_pull_vs_oras=R`` (skillctl time /
oras time; larger means skillctl is slower); the one before it ``oci_publish_vs_oras=P``.

    python bench/oci_vs_oras.py [--skills 40] [--rounds 15] [--publish-rounds 3]

``oras`` is only ever a benchmark's baseline, never a dependency of skillctl: install it into the
virtual environment the benchmark runs in, ``.venv/bin/pip install oras`` (the figures in
docs/benchmarks.md: oras 0.2.43 from PyPI, installed that way into ./.venv). Without it the
benchmark says so and exits 2. Not a test: nothing here asserts on time. Needs
``apt-get install docker-registry``.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillctl.registry.oci import OciRegistry
from skillctl.registry.oci.artifact import LAYER_MEDIA_TYPE
from skillctl.registry.oci.names import version_tag

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from oci_vs_local import make_bundles  # noqa: E402 - the same skills as the folder-registry benchmark
from tests.oci.server import APT_PACKAGES, BINARY, DistributionServer  # noqa: E402 - the tests' server runner


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skills", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=15, help="pull rounds (each side pulls all skills once per round)")
    ap.add_argument("--publish-rounds", type=int, default=3)
    args = ap.parse_args()
    try:
        import oras.provider
    except ImportError:
        print("oras is not importable here: install the baseline into this venv only (.venv/bin/pip install oras); "
              "it is never a dependency of skillctl", file=sys.stderr)
        return 2
    if not Path(BINARY).exists():
        print(f"docker-registry is not installed (apt-get install {APT_PACKAGES})", file=sys.stderr)
        return 2
    logging.getLogger("oras").setLevel(logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="skillctl-bench-oras-"))
    server = DistributionServer(tmp / "server").start()
    try:
        bundles = make_bundles(tmp / "src", args.skills)
        files = tmp / "bundles"
        files.mkdir()
        for b in bundles:
            (files / f"{b.name}-{b.version}.skill.tgz").write_bytes(b.data)
        pulled = OciRegistry.from_url(server.url("pulled"), insecure=True)
        for b in bundles:  # the artifacts both sides pull
            pulled.publish(b)
        pulled.close()
        times: dict[str, list[float]] = {k: [] for k in ("oci_publish", "oras_publish", "oci_pull", "oras_pull")}
        requests_per_pull = 0.0

        def oci_publish(ns: str) -> None:
            with OciRegistry.from_url(server.url(ns), insecure=True) as reg:
                for b in bundles:
                    reg.publish(b)

        def oras_publish(ns: str) -> None:
            client = oras.provider.Registry(hostname=server.host, insecure=True)
            for b in bundles:
                path = files / f"{b.name}-{b.version}.skill.tgz"
                client.push(f"{server.host}/{ns}/{b.name}:{version_tag(b.version)}", files=[f"{path}:{LAYER_MEDIA_TYPE}"],
                            disable_path_validation=True, quiet=True)

        def oci_pull(out: Path) -> int:
            with OciRegistry.from_url(server.url("pulled"), insecure=True) as reg:
                for b in bundles:
                    rec = reg.resolve(f"{b.name}@{b.version}")
                    (out / f"{rec.name}-{rec.version}.skill.tgz").write_bytes(reg.fetch(rec))
                return reg.client.requests

        def oras_pull(out: Path) -> None:
            client = oras.provider.Registry(hostname=server.host, insecure=True)
            for b in bundles:
                client.pull(target=f"{server.host}/pulled/{b.name}:{version_tag(b.version)}", outdir=str(out))

        for rnd in range(args.publish_rounds):
            for side in ("oci", "oras") if rnd % 2 == 0 else ("oras", "oci"):
                t0 = time.perf_counter()
                (oci_publish if side == "oci" else oras_publish)(f"{side}{rnd}")
                times[f"{side}_publish"].append(time.perf_counter() - t0)
        for rnd in range(args.rounds):
            for side in ("oci", "oras") if rnd % 2 == 0 else ("oras", "oci"):
                out = tmp / f"out-{side}{rnd}"
                out.mkdir()
                t0 = time.perf_counter()
                if side == "oci":
                    requests_per_pull = oci_pull(out) / len(bundles)
                else:
                    oras_pull(out)
                times[f"{side}_pull"].append(time.perf_counter() - t0)
                got = sorted(p.name for p in out.iterdir())
                assert len(got) == len(bundles), f"{side} pulled {len(got)} of {len(bundles)} bundles"
        med = {k: statistics.median(v) for k, v in times.items()}
        n = len(bundles)
        print(f"{n} skills, {args.rounds} pull rounds, {args.publish_rounds} publish rounds, medians (per skill):")
        for what in ("publish", "pull"):
            o, r = med[f"oci_{what}"], med[f"oras_{what}"]
            print(f"  {what:<8} skillctl {o:7.3f} s ({o / n * 1000:6.2f} ms)   oras {r:7.3f} s ({r / n * 1000:6.2f} ms)")
        print(f"  HTTP requests per skill, skillctl exact-pin pull: {requests_per_pull:.1f}")
        print(f"oci_publish_vs_oras={med['oci_publish'] / med['oras_publish']:.2f}")
        print(f"oci_pull_vs_oras={med['oci_pull'] / med['oras_pull']:.2f}")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
