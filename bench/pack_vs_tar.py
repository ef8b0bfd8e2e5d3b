"""Benchmark: ``skillctl.bundle.pack`` + ``write_bundle`` against ``tar czf`` on the same folder.

Builds a realistic skill folder (a few hundred files: scripts, references, JSON, a few binary
assets), times both in the same run, alternating them so machine noise hits both alike, and
prints medians and the ratio, last, as ``pack_vs_tar=R``. Target: R <= 1.2.

    python bench/pack_vs_tar.py [--files 300] [--reps 7] [--keep]

Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skillctl.bundle import pack, write_bundle



def build_skill(root: Path, n_files: int, seed: int = 7) -> int:
    """Write a skill folder of ``n_files`` files; returns its total size in bytes."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 10))) for _ in range(4000)]

    def text(words: int) -> str:
        lines, line = [], []
        for _ in range(words):
            line.append(rng.choice(vocab))
            if len(line) > rng.randint(6, 14):
                lines.append("    " * rng.randint(0, 3) + " ".join(line))
                line = []
        return "\n".join(lines) + "\n"

    root.mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: bench\ndescription: Benchmark skill.\n---\n\n" + text(1500))
    for i in range(n_files - 1):
        kind = i % 20
        if kind == 0:  # binary asset: fonts, images (incompressible)
            path = root / "assets" / f"asset{i:03}.bin"
            data: bytes | str = rng.randbytes(rng.randint(100_000, 900_000))
        elif kind < 4:  # reference documents
            path = root / "references" / f"doc{i:03}.md"
            data = text(rng.randint(3_000, 20_000))
        elif kind < 6:  # JSON schemas and examples
            path = root / "references" / "schemas" / f"s{i:03}.json"
            data = json.dumps({w: [rng.random() for _ in range(5)] for w in rng.sample(vocab, 200)}, indent=2)
        else:  # scripts and their modules
            path = root / "scripts" / f"pkg{i % 7}" / f"mod{i:03}.py"
            data = text(rng.randint(50, 2_000))
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)
        if kind >= 6 and i % 3 == 0:
            path.chmod(0o755)
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _cpu_seconds() -> float:
    """User+system CPU of this process (all threads) plus its finished children (tar, gzip)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    if shutil.which("tar") is None:
        print("needs tar on PATH", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="skillctl-bench-"))
    try:
        skill = work / "src" / "bench"
        total = build_skill(skill, args.files)
        out = work / "out"
        out.mkdir()

        def ours() -> None:
            write_bundle(pack(skill, "bench"), out, "1.0.0")

        def tar() -> None:
            subprocess.run(["tar", "-czf", str(out / "bench.tar.gz"), "-C", str(skill.parent), "bench"], check=True)

        ours(), tar()  # warm the page cache and imports
        timings: dict[str, list[float]] = {"pack": [], "tar czf": []}
        # CPU seconds too: on a shared machine wall time swings with other load, CPU time less.
        cpu: dict[str, list[float]] = {"pack": [], "tar czf": []}
        for _ in range(args.reps):
            for label, fn in (("pack", ours), ("tar czf", tar)):
                cpu_start = _cpu_seconds()
                start = time.perf_counter()
                fn()
                timings[label].append(time.perf_counter() - start)
                cpu[label].append(_cpu_seconds() - cpu_start)
        ours_size = (out / "bench-1.0.0.skill.tgz").stat().st_size
        tar_size = (out / "bench.tar.gz").stat().st_size
        print(f"folder: {args.files} files, {total / 1e6:.1f} MB; reps: {args.reps}")
        for label, values in timings.items():
            print(
                f"{label:8} median {statistics.median(values) * 1000:8.1f} ms   min {min(values) * 1000:8.1f} ms"
                f"   cpu median {statistics.median(cpu[label]) * 1000:8.1f} ms"
            )
        cpu_ratio = statistics.median(cpu["pack"]) / statistics.median(cpu["tar czf"])
        print(f"pack_cpu_vs_tar_cpu={cpu_ratio:.2f}")
        print(f"sizes: pack {ours_size} bytes, tar czf {tar_size} bytes ({ours_size / tar_size:.3f}x)")
        ratio = statistics.median(timings["pack"]) / statistics.median(timings["tar czf"])
        print(f"pack_vs_tar={ratio:.2f}")
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
