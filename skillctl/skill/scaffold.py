"""``skillctl init``: a new skill that already passes ``validate --strict``."""

from __future__ import annotations

import json
import os
import shutil
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
    desc = description or f"Describe what {name} does and when an agent should use it."
    if "\n" in desc or len(desc) > 1024:
        raise SkillError("description must be a single line of at most 1024 characters")
    # OSError (a read-only output folder, a file where a folder should be) becomes one line, not a traceback
    try:
        if folder.exists() or folder.is_symlink():
            raise SkillError(f"{folder} already exists; choose another name or remove it first")
        folder.mkdir(parents=True)
    except OSError as exc:
        raise SkillError(f"cannot create {folder}: {exc.strerror or exc}; choose a folder you can write to (-o/--output)") from exc
    try:
        _write(folder, name, desc)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)  # made by us a moment ago: leave nothing half-done
        raise SkillError(f"cannot write the skill files in {folder}: {exc.strerror or exc}") from exc
    return folder


def _write(folder: Path, name: str, desc: str) -> None:
    (folder / "scripts").mkdir()
    (folder / "references").mkdir()
    # A JSON string is a valid YAML double-quoted scalar, with every control character escaped
    # (a hand-rolled quote/backslash escape let e.g. \x07 through into an unparsable SKILL.md).
    quoted = json.dumps(desc, ensure_ascii=False)
    (folder / "SKILL.md").write_text(
        _SKILL_MD.format(name=name, description=quoted, title=name.replace("-", " ").capitalize()), "utf-8"
    )
    run = folder / "scripts" / "run.sh"
    run.write_text(_RUN_SH, "utf-8")
    os.chmod(run, 0o755)
    (folder / "references" / "notes.md").write_text(_NOTES.format(name=name), "utf-8")
