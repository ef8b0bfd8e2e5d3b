"""Environment rebuild: adding one small package to an environment, against its cold build.

The environment: numpy, pandas and openpyxl (with their dependencies), real wheels served from
the loopback index over .cache/test-wheels (or $SKILLCTL_TEST_WHEELS; scripts/setup.sh fetches
them; no network needed).
The change: PyYAML added. Both recipes are measured in the same run, on the same engine:

* one part (the recipe before parts: every wheel installed by one RUN, so any change reinstalls
  all of them) — ``build_env_image(..., buckets=1, alone_above=inf)``;
* parts (the default: big wheels alone, the others in buckets by name; only the part that
  changed is installed again, the others are reused).

Each recipe: the cold build (no layer cache, no part reused), then the rebuild with PyYAML added.
Everything this benchmark builds carries its own hash salt and is removed at the end.

Last lines: ``rebuild_ratio_one_part=R`` and ``rebuild_ratio=R`` (rebuild / cold; lower is better).

    python bench/env_rebuild.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

BASE_SET = ("numpy", "pandas", "openpyxl")
ADDED = "pyyaml"


def main() -> int:
    from package_index import PackageIndex

    from skillctl.env.build import EnvFile, build_env_image, env_hash
    from skillctl.env.declare import Declarations, Declared
    from skillctl.env.files import Wanted, ensure_files
    from skillctl.env.prepare import resolve_environment
    from skillctl.env.resolve import uv_binary, uv_version
    from skillctl.env.target import probe_image
    from skillctl.sandbox.client import docker_client
    from skillctl.sandbox.image import ensure_image

    wheels = Path(os.environ.get("SKILLCTL_TEST_WHEELS", REPO / ".cache" / "test-wheels"))
    if not any(wheels.glob("pandas-*.whl")):
        print("no wheels in .cache/test-wheels: run scripts/setup.sh first", file=sys.stderr)
        return 1
    client = docker_client()
    base_ref = ensure_image()
    base = client.images.get(base_ref)
    root = Path(tempfile.mkdtemp(prefix="bench-rebuild-"))
    uv = uv_binary()
    salt = f"{uv_version(uv)} bench-rebuild-{os.getpid()}-{time.time()}"  # nothing shared with real builds
    built: list[str] = []
    figures: dict[str, tuple[float, float]] = {}
    first: list = []
    second: list = []
    recipes = (("one part", {"buckets": 1, "alone_above": float("inf")}), ("parts", {}))
    try:
        os.environ["SKILLCTL_CACHE_DIR"] = str(root / "cache")
        with PackageIndex(wheels) as index:
            target = probe_image(client, base_ref)

            def files_of(names):
                decl = Declarations(tuple(Declared(n, "bench", "x") for n in names))
                env = resolve_environment(decl, target, index=index.url, base_image=base_ref, client=client)
                paths = ensure_files([Wanted(f.filename, f.url, f.sha256, f.size) for f in env.python.wheels])
                return [EnvFile(p, f.sha256, f.pin) for p, f in zip(paths, env.python.wheels)]

            first, second = files_of(BASE_SET), files_of(BASE_SET + (ADDED,))
            for label, options in recipes:
                times = []
                for files, force in ((first, True), (second, False)):
                    mode_salt = f"{salt} {label}"
                    digest = env_hash(base.id, [(f.path.name, f.sha256) for f in files], [], mode_salt)
                    started = time.perf_counter()
                    built.append(build_env_image(client, base, digest, files, [], uv_bin=uv, uv=mode_salt,
                                                 force=force, progress=lambda line: None, **options))
                    times.append(time.perf_counter() - started)
                figures[label] = (times[0], times[1])
                print(f"{label}: cold {times[0]:.1f} s, rebuild with {ADDED} added {times[1]:.1f} s", flush=True)
    finally:
        for tag in built:
            try:
                client.images.remove(tag, force=True)
            except Exception:
                pass
        from skillctl.env.build import part_hash, partition  # the parts this run made: its salt is in their hash

        for files in (first, second):
            for label, options in recipes:
                for part in partition(files, **options):
                    try:
                        client.images.remove(f"skillctl-env-part:{part_hash(base.id, part, f'{salt} {label}')[:12]}",
                                             force=True)
                    except Exception:
                        pass
        shutil.rmtree(root, ignore_errors=True)
    print(f"wheels: {len(first)} for {', '.join(BASE_SET)}; {len(second)} with {ADDED}")
    one_cold, one_rebuild = figures["one part"]
    cold, rebuild = figures["parts"]
    print(f"rebuild_ratio_one_part={one_rebuild / one_cold:.2f}")
    print(f"rebuild_ratio={rebuild / cold:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
