"""``skillctl init``: a new skill that already passes ``validate --strict``."""

from __future__ import annotations

import os
from pathlib import Path

from skillctl.errors import SkillError
from skillctl.skill.rules import name_problems

_SKILL_MD = """---
name: {name}
description: {description}
license: Apache-2.0
metadata:
  version: "0.1.0"
---

# {title}

Use this skill when … (say when an agent should reach for it).

## How to use it

1. Run `scripts/run.sh` with the input file as its argument.
2. Read [the reference notes](references/notes.md) for details and edge cases.

## Output

Describe what the script prints and how to interpret it.
"""

_RUN_SH = """#!/bin/sh
# Entry point of the skill. Keep output short: the agent pays for every line it reads.
set -eu
if [ $# -lt 1 ]; then
    echo "usage: $0 FILE" >&2
    exit 2
fi
wc -w "$1"
"""

_NOTES = """# Notes for {name}

Details the agent reads only when it needs them (keep SKILL.md short).
"""


def scaffold(name: str, parent: Path, description: str | None = None) -> Path:
    """Create ``parent/name`` with SKILL.md, scripts/run.sh and references/notes.md."""
    problems = name_problems(name)
    if not name:
        raise SkillError("skill name must not be empty")
    if problems:
        raise SkillError(f"invalid skill name: {problems[0][1]}")
    folder = parent / name
    if folder.exists():
        raise SkillError(f"{folder} already exists; choose another name or remove it first")
    desc = description or f"Describe what {name} does and when an agent should use it."
    if "\n" in desc or len(desc) > 1024:
        raise SkillError("description must be a single line of at most 1024 characters")
    (folder / "scripts").mkdir(parents=True)
    (folder / "references").mkdir()
    quoted = '"' + desc.replace("\\", "\\\\").replace('"', '\\"') + '"'
    (folder / "SKILL.md").write_text(
        _SKILL_MD.format(name=name, description=quoted, title=name.replace("-", " ").capitalize()), "utf-8"
    )
    run = folder / "scripts" / "run.sh"
    run.write_text(_RUN_SH, "utf-8")
    os.chmod(run, 0o755)
    (folder / "references" / "notes.md").write_text(_NOTES.format(name=name), "utf-8")
    return folder
