"""Environment start: a run's start with a cached environment image vs the plain agent image.

Both sides do what `skillctl run --skill` does up to the first prompt: fetch and verify the 4
skills' bundles once (the repository's examples, one of them declaring numpy and pandas in a PEP
723 block; ``Runner.fetch_bundles``), start a hardened sandbox and load the skills from those
verified contents. The environment side also does everything a run does before the sandbox
starts when the environment is cached: read each skill's declarations and imports from the same
contents, probe the agent image (cached by id), find the cached resolution, find the image by
its environment hash (its tag, one inspect), check its system libraries (cached by image id) and
the skills' imports against the wheels' file lists (kept by sha256). Measured interleaved,
medians compared.

Also reported: the cold build for numpy + pandas (fresh cache: resolve, download, build with no
layer cache) beside the download size. Wheels come from the loopback index over the files
scripts/setup.sh fetched (.cache/test-wheels), so the network is not needed.

Last line: ``env_start_ratio=R`` (environment / plain; target <= 1.05).

    python bench/env_start.py [--runs 8]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

SCRIPT = ('#!/usr/bin/env python3\n# /// script\n# dependencies = ["numpy", "pandas"]\n# ///\n'
          "import pandas\nprint(pandas.DataFrame({'x': [1, 2]}).sum().x)\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()

    from package_index import PackageIndex

    from skillctl.env.prepare import environment_image
    from skillctl.registry.local import LocalRegistry
    from skillctl.registry.prepare import prepare_folder
    from skillctl.runtime.loader import fetch_bundles, load_skills
    from skillctl.sandbox import open_sandbox
    from skillctl.sandbox.client import docker_client
    from skillctl.sandbox.image import ensure_image

    wheels = REPO / ".cache" / "test-wheels"
    if not any(wheels.glob("pandas-*.whl")):
        print("no wheels in .cache/test-wheels: run scripts/setup.sh first", file=sys.stderr)
        return 1
    client = docker_client()
    base = ensure_image()
    root = Path(tempfile.mkdtemp(prefix="bench-env-"))
    say = lambda line: None  # noqa: E731
    try:
        reg = LocalRegistry(root / "reg")
        names = []
        for i, src in enumerate(sorted(p for p in (REPO / "skills").iterdir() if (p / "SKILL.md").exists())[:4]):
            dst = root / "src" / src.name
            shutil.copytree(src, dst)
            if i == 0:
                (dst / "scripts").mkdir(exist_ok=True)
                (dst / "scripts" / "frame.py").write_text(SCRIPT)
            reg.publish(prepare_folder(dst))
            names.append(src.name)
        skills = [reg.resolve(n) for n in names]
        with PackageIndex(wheels) as index:
            os.environ["SKILLCTL_CACHE_DIR"] = str(root / "cold-cache")
            started = time.perf_counter()
            from skillctl.env.declare import Declarations, Declared
            from skillctl.env.prepare import build_environment, resolve_environment
            from skillctl.env.target import probe_image

            decl = Declarations((Declared("numpy", "bench", "x"), Declared("pandas", "bench", "x")))
            env = resolve_environment(decl, probe_image(client, base), index=index.url, base_image=base, client=client)
            tag = build_environment(env, client, base, progress=say, force=True)
            cold_s = time.perf_counter() - started
            size_mb = sum((wheels / f.filename).stat().st_size for f in env.python.files) / 1e6

            def start(image_of):
                t0 = time.perf_counter()
                bundles = fetch_bundles(reg, skills)  # once per run, before any container (Runner.fetch_bundles)
                image = image_of(bundles)
                with open_sandbox("docker", image=image, client=client) as box:
                    load_skills(skills, reg, box, bundles=bundles)
                return time.perf_counter() - t0

            env_side = lambda bundles: environment_image(skills, reg, base_image=base, index=index.url,  # noqa: E731
                                                         client=client, bundles=bundles)
            plain_side = lambda bundles: base  # noqa: E731
            assert env_side(None) == tag
            start(env_side), start(plain_side)  # warm-up
            env_times, plain_times = [], []
            for _ in range(args.runs):
                env_times.append(start(env_side))
                plain_times.append(start(plain_side))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    env_ms, plain_ms = statistics.median(env_times) * 1000, statistics.median(plain_times) * 1000
    print(f"cold numpy+pandas environment: {cold_s:.1f} s for {size_mb:.1f} MB of wheels ({len(env.python.files)} files)")
    print(f"start + load 4 skills: environment image {env_ms:.0f} ms, plain image {plain_ms:.0f} ms (median of {args.runs})")
    print(f"env_start_ratio={env_ms / plain_ms:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
