"""Benchmark: ``plan_sync`` of a target folder holding 100 installed skills, nothing to do.

Installs 100 skills (SKILL.md, a script, a reference file of ~8 KiB each) into a fresh target
folder with ``install_into``, then measures the CPU time (``time.process_time``) of
``plan_sync(target, wanted)`` where ``wanted`` is exactly what is installed: the first call in
the process and the median of the next ones.
The baseline, in the same run, is what a check without the recorded stat data costs: the same
plan on a copy of the folder (new inodes, so every file is hashed again). Then the whole command:
a project locking the same 100 skills from a folder registry, installed once, and ``skillctl sync``
run as a process (interpreter start, imports, reading both files, the staleness check, the plan),
best of three, its CPU time read from ``RUSAGE_CHILDREN``. Prints ``sync_cli_noop_cpu_s=Y`` and,
last, ``sync_noop_cpu_s=X`` with X the first plan's CPU time. Target: <= 0.5 s each.

    python bench/sync_noop.py [--skills 100] [--reps 20]

Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillctl.bundle import pack, read_bundle
from skillctl.project.install import install_into, plan_sync


def make_skill(root: Path, name: str):
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "references").mkdir()
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Benchmark skill {name}; use it when measuring sync.\n"
        f"metadata:\n  version: \"1.0.0\"\n---\n\n# {name}\n\nRun scripts/run.sh.\n", "utf-8")
    (folder / "scripts/run.sh").write_text("#!/bin/sh\necho ok\n")
    (folder / "scripts/run.sh").chmod(0o755)
    (folder / "references/guide.md").write_text("Reference text. " * 512)
    return read_bundle(pack(folder, name).data, expected_name=name)


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def cli_sync_cpu(work: Path, count: int) -> float:
    """CPU time of ``skillctl sync`` with nothing to do, best of three, as a process."""
    from skillctl.project.workflow import Workspace
    from skillctl.registry.local import LocalRegistry
    from skillctl.registry.prepare import prepare_folder

    registry, project = work / "registry", work / "cli-project"
    project.mkdir()
    with LocalRegistry(registry) as reg:
        for i in range(count):
            reg.publish(prepare_folder(work / "src" / f"skill-{i:03d}"))
    (project / "skills.yaml").write_text(f"registries: {{default: {registry}}}\nskills:\n" +
                                         "".join(f"  skill-{i:03d}: ^1.0.0\n" for i in range(count)))
    with Workspace(project / "skills.yaml", project / "skills.lock") as ws:
        lock, _ = ws.lock()
        ws.sync(lock, ws.target_folders(), remove=True)
    env = {k: v for k, v in os.environ.items() if k != "SKILLCTL_REGISTRY"}
    best = None
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "from skillctl.cli import main; main()", "sync"], cwd=project, env=env, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = spent if best is None else min(best, spent)
    return best or 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skills", type=int, default=100)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        target = work / "project/.agents/skills"
        wanted = {}
        for i in range(args.skills):
            contents = make_skill(work / "src", f"skill-{i:03d}")
            provenance = {"source": {"kind": "registry", "location": "/srv/skills"}, "version": "1.0.0",
                          "revision": "", "tar_digest": contents.tar_digest}
            install_into(target, contents, provenance, durable=False)
            wanted[contents.name] = contents.tar_digest

        plan = None

        def run() -> None:
            nonlocal plan
            plan = plan_sync(target, wanted)

        first = cpu(run)
        assert plan is not None and plan.nothing_to_do and len(plan.keep) == args.skills, plan
        warm = statistics.median(cpu(run) for _ in range(args.reps))
        copy = work / "copy"
        shutil.copytree(work / "project", copy, symlinks=True)
        rehash = cpu(lambda: plan_sync(copy / ".agents/skills", wanted))
        cli_cpu = cli_sync_cpu(work, args.skills)
    print(f"skills={args.skills} first_call_cpu_s={first:.4f} warm_median_cpu_s={warm:.4f} "
          f"rehash_all_cpu_s={rehash:.4f} (stat shortcut saves {rehash / warm if warm else 0:.1f}x)")
    print(f"sync_cli_noop_cpu_s={cli_cpu:.4f}")
    print(f"sync_noop_cpu_s={first:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
