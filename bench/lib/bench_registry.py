"""The folder registry of N small skills (SKILL.md, a script, a reference) the benchmarks of
remote registries compare against: bench/site.py and bench/mcp_serve.py publish the same skills,
so their figures are about the transport, not the content."""

from __future__ import annotations

import sys
from pathlib import Path

from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder


def make_registry(root: Path, n: int, purpose: str) -> LocalRegistry:
    """A folder registry at ``root/registry`` holding ``n`` skills; ``purpose`` finishes their
    descriptions ("benchmarking skill sites")."""
    reg = LocalRegistry(root / "registry")
    for i in range(n):
        folder = root / "src" / f"skill-{i:04}"
        (folder / "scripts").mkdir(parents=True)
        (folder / "references").mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04}\ndescription: Benchmark skill number {i}; use it when {purpose}.\n"
            f"metadata:\n  version: \"1.{i % 5}.0\"\n---\n\n# Skill {i}\n\nRun scripts/run.py; see references/notes.md.\n"
            + "Some instructions. " * 50,
            "utf-8",
        )
        (folder / "scripts" / "run.py").write_text("#!/usr/bin/env python3\nprint('ok')\n" + f"# {i}\n" * 40, "utf-8")
        (folder / "scripts" / "run.py").chmod(0o755)
        (folder / "references" / "notes.md").write_text(f"Notes for skill {i}.\n" * 20, "utf-8")
        reg.publish(prepare_folder(folder))
        if (i + 1) % 250 == 0:
            print(f"  published {i + 1}/{n}", file=sys.stderr)
    return reg
