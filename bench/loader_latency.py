"""Loader latency: "load these 10 skills" to "ready for the first prompt", against the bare CLI.

Ours: start a hardened sandbox (reap orphans, create with limits and three tmpfs volumes,
start), then ``load_skills`` — resolve 10 refs in a real registry folder, fetch and verify every
bundle (sha256 + hostile-archive checks), copy the verified skills into the container in one
``put_archive``, unpacked under /skills/NAME/, render the catalog.
Baseline, in the same run, interleaved: ``docker run -d IMAGE`` + one ``docker exec CID true``
through the CLI (no limits, no volumes, no skills) — the least any container start costs.

Prints medians, where our time goes, and as the last line ``loader_ratio=R`` (ours / baseline;
target <= 1.3).

    python bench/loader_latency.py [--runs 8]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
N_SKILLS = 10


def make_registry(root: Path):
    """A registry folder holding 10 skills: the 4 examples and 6 renamed copies of them."""
    from skillctl.registry.local import LocalRegistry
    from skillctl.registry.prepare import prepare_folder

    examples = sorted(p for p in (REPO / "skills").iterdir() if (p / "SKILL.md").exists())
    folders = list(examples)
    i = 0
    while len(folders) < N_SKILLS:
        src = examples[i % len(examples)]
        name = f"{src.name}-copy{i}"
        dst = root / "src" / name
        shutil.copytree(src, dst)
        md = dst / "SKILL.md"
        md.write_text(md.read_text("utf-8").replace(f"name: {src.name}\n", f"name: {name}\n", 1), "utf-8")
        folders.append(dst)
        i += 1
    reg = LocalRegistry(root / "reg")
    for folder in folders:
        reg.publish(prepare_folder(folder))
    return reg, [f.name for f in folders]


class TimedSandbox:
    """The sandbox, with the time spent copying skills in (put_archive) added up, to show where
    the time goes."""

    def __init__(self, inner):
        self.inner = inner
        self.put_s = 0.0

    def put_archive(self, dest_dir, tar_bytes, *, user=None):
        started = time.perf_counter()
        try:
            return self.inner.put_archive(dest_dir, tar_bytes, user=user)
        finally:
            self.put_s += time.perf_counter() - started

    def __getattr__(self, name):
        return getattr(self.inner, name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="measured loads per side")
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()

    from skillctl.runtime.loader import load_skills
    from skillctl.sandbox.client import docker_client
    from skillctl.sandbox.docker_backend import DockerSandbox
    from skillctl.sandbox.image import ensure_image

    docker_cli = shutil.which("docker")
    if docker_cli is None:
        print("error: the docker CLI is needed for the baseline", file=sys.stderr)
        return 1
    client = docker_client()
    image = ensure_image(progress=lambda line: print(line, file=sys.stderr), client=client)

    with tempfile.TemporaryDirectory(prefix="skillctl-bench-") as tmp:
        reg, names = make_registry(Path(tmp))
        ours: list[float] = []
        base: list[float] = []
        parts: dict[str, list[float]] = {"start": [], "load (resolve, fetch, verify)": [], "put_archive (one, all skills)": [], "stop (untimed)": []}

        def load_ours(record: bool) -> None:
            sb = DockerSandbox(image=image, client=client)
            started = time.perf_counter()
            try:
                sb.start()
                t_started = time.perf_counter()
                timed = TimedSandbox(sb)
                loaded = load_skills(names, reg, timed)
                ready = time.perf_counter()
            finally:
                t_stop = time.perf_counter()
                sb.stop()
                stopped = time.perf_counter()
            assert len(loaded.skills) == N_SKILLS and loaded.catalog_text.count("<skill>") == N_SKILLS
            if record:
                ours.append(ready - started)
                parts["start"].append(t_started - started)
                parts["load (resolve, fetch, verify)"].append(ready - t_started - timed.put_s)
                parts["put_archive (one, all skills)"].append(timed.put_s)
                parts["stop (untimed)"].append(stopped - t_stop)

        def load_bare(record: bool) -> None:
            started = time.perf_counter()
            cid = subprocess.run([docker_cli, "run", "-d", image, "600"], check=True, capture_output=True, text=True).stdout.strip()
            try:
                subprocess.run([docker_cli, "exec", cid, "true"], check=True, stdout=subprocess.DEVNULL)
                ready = time.perf_counter()
            finally:
                subprocess.run([docker_cli, "rm", "-f", cid], check=True, stdout=subprocess.DEVNULL)
            if record:
                base.append(ready - started)

        for _ in range(args.warmup):
            load_ours(False)
            load_bare(False)
        for i in range(args.runs):
            # Alternate which goes first so neither always follows the other.
            order = (load_ours, load_bare) if i % 2 else (load_bare, load_ours)
            for fn in order:
                fn(True)
        reg.close()

    ours_med, base_med = statistics.median(ours), statistics.median(base)
    print(f"runs per side: {args.runs}; skills per load: {N_SKILLS}")
    print(f"start + load_skills + catalog:      median {ours_med * 1000:7.1f} ms  (min {min(ours) * 1000:.1f})")
    print(f"docker run -d + docker exec (CLI):  median {base_med * 1000:7.1f} ms  (min {min(base) * 1000:.1f})")
    print("where our time goes (medians):")
    for label, values in parts.items():
        print(f"  {label:32s} {statistics.median(values) * 1000:7.1f} ms")
    print(f"loader_ratio={ours_med / base_med:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
