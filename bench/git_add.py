"""Benchmark: taking ONE skill from a git repository of 200 skills, as ``skillctl add`` does.

Builds a bare repository of 200 small skills (``skills/skill-NNN``: SKILL.md, a reference and a
script each; built with ``git fast-import``) served on loopback by ``git daemon`` and reached by
``file://``, then times, in the same run and alternating, with a fresh cache each time:

(a) skillctl: ``GitSource.resolve`` + ``fetch`` of one skill (ls-remote, a shallow blob-less fetch,
    the tree search, one batch fetch of the skill's blobs, the bundle checks and digests);
(b) git alone: ``git clone --depth 1 --filter=blob:none --no-checkout`` then ``git sparse-checkout
    set skills/skill-NNN`` and ``git checkout`` — what one would type to get that folder.

Prints the medians of each and, last, ``git_add_ratio=X`` (median of (a) / median of (b) over both
transports' worst). Target: X <= 2.0.

    python bench/git_add.py [--skills 200] [--reps 15]

Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from sources.git_servers import GIT, WHEN, GitDaemon, Repo, clean_env, skill_md  # noqa: E402 - the tests' servers

from skillctl.protocols import SourceSpec  # noqa: E402
from skillctl.sources.git import GitSource  # noqa: E402


def build(root: Path, count: int) -> None:
    repo = Repo(root / "many.git")
    chunks = [f"commit refs/heads/main\ncommitter Bench <b@example.com> {WHEN} +0000\ndata 5\nmany\n".encode()]
    for i in range(count):
        name = f"skill-{i:03d}"
        files = {
            "SKILL.md": skill_md(name, version=f"1.0.{i}", body=f"Read references/guide.md, then run scripts/run.sh {i}.\n"),
            "references/guide.md": f"# Guide {i}\n\n".encode() + b"Some text to read.\n" * 40,
            "scripts/run.sh": f"#!/bin/sh\necho {name}\n".encode(),
        }
        for rel, data in files.items():
            mode = b"100755" if rel.endswith(".sh") else b"100644"
            chunks.append(b"M %s inline skills/%s/%s\ndata %d\n%s\n" % (mode, name.encode(), rel.encode(), len(data), data))
    chunks.append(b"\n")
    repo.fast_import(b"".join(chunks))
    repo.tag("v1.0.0", repo.rev("main"))


def skillctl_add(url: str, name: str, work: Path) -> None:
    with GitSource(insecure=True, environ={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, cache_dir=work) as src:
        pin = src.resolve(SourceSpec("git", url, "v1.0.0", name=name))
        contents = src.fetch(pin)
    assert contents.name == name and len(contents.files) == 3


def git_sparse(url: str, name: str, work: Path) -> None:
    env = clean_env(HOME=str(work))
    dest = work / "clone"

    def run(*args: str) -> None:
        subprocess.run([GIT, *args], check=True, env=env, capture_output=True)

    run("clone", "-q", "--depth", "1", "--filter=blob:none", "--no-checkout", "--branch", "v1.0.0", url, str(dest))
    run("-C", str(dest), "sparse-checkout", "set", f"skills/{name}")
    run("-C", str(dest), "checkout", "-q")
    assert (dest / "skills" / name / "SKILL.md").is_file()


def timed(fn, *args) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-git-") as tmp:
        start = time.perf_counter()
        fn(*args, Path(tmp))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-git-repos-") as tmp:
        root = Path(tmp)
        build(root, args.skills)
        daemon = GitDaemon(root).start()
        try:
            ratios = []
            for transport, url in (("daemon", daemon.url("many.git")), ("file", f"file://{root / 'many.git'}")):
                ours, theirs = [], []
                for rep in range(args.reps + 2):
                    name = f"skill-{(rep * 37) % args.skills:03d}"
                    a, b = timed(skillctl_add, url, name), timed(git_sparse, url, name)
                    if rep >= 2:  # warm-up: page cache, imports
                        ours.append(a)
                        theirs.append(b)
                ratio = statistics.median(ours) / statistics.median(theirs)
                ratios.append(ratio)
                print(f"{transport}: skillctl resolve+fetch median {statistics.median(ours) * 1000:.1f} ms, "
                      f"git clone+sparse checkout median {statistics.median(theirs) * 1000:.1f} ms, ratio {ratio:.2f}")
        finally:
            daemon.stop()
            shutil.rmtree(root, ignore_errors=True)
    print(f"git_add_ratio={max(ratios):.2f} skills={args.skills}")


if __name__ == "__main__":
    main()
