"""Shebang and run-bit checks, only for files that are executed directly.

A script the instructions run as ``python scripts/x.py`` needs neither a shebang nor a run bit;
most real skills do exactly that. Two things make a file *executed directly*:

- the skill's instructions run it in command position (``scripts/run.sh --in x``,
  ``./scripts/x.py``, ``{baseDir}/scripts/x.sh``): it needs both (SK221, SK222);
- it starts with a shebang — its author meant it to run on its own — yet has no run bit and is
  never run through an interpreter: it needs the run bit (SK222).

The advice fits the file: ``#!/usr/bin/env python3`` for Python, ``#!/usr/bin/env pwsh`` for
PowerShell, and for a file type without a usual interpreter, run it through one instead.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from skillctl.skill.diagnostics import Diagnostic
from skillctl.skill.files import FileEntry

SHEBANGS = {
    ".py": "#!/usr/bin/env python3",
    ".sh": "#!/bin/sh",
    ".bash": "#!/usr/bin/env bash",
    ".zsh": "#!/usr/bin/env zsh",
    ".fish": "#!/usr/bin/env fish",
    ".js": "#!/usr/bin/env node",
    ".mjs": "#!/usr/bin/env node",
    ".cjs": "#!/usr/bin/env node",
    ".ts": "#!/usr/bin/env -S npx tsx",
    ".rb": "#!/usr/bin/env ruby",
    ".pl": "#!/usr/bin/env perl",
    ".php": "#!/usr/bin/env php",
    ".ps1": "#!/usr/bin/env pwsh",
    ".r": "#!/usr/bin/env Rscript",
    ".lua": "#!/usr/bin/env lua",
}
INTERPRETERS = {
    ".py": "python3", ".sh": "sh", ".bash": "bash", ".zsh": "zsh", ".fish": "fish", ".js": "node", ".mjs": "node",
    ".cjs": "node", ".ts": "npx tsx", ".rb": "ruby", ".pl": "perl", ".php": "php", ".ps1": "pwsh", ".r": "Rscript", ".lua": "lua",
}
# Files a shebang makes sense in (others are never read for one: a skill may hold thousands of
# schema or image files).
_SCRIPT_SUFFIXES = frozenset(SHEBANGS) | {""}
# Executable formats that need no shebang.
_BINARY_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


def _suffix(rel: str) -> str:
    name = posixpath.basename(rel)
    return posixpath.splitext(name)[1].lower() if not name.startswith(".") else ""


def _head(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(4)
    except OSError:
        return None


def check_scripts(
    folder: Path,
    shown: str,
    files: tuple[FileEntry, ...],
    executed: dict[str, tuple[str, int, int]],
    interpreted: set[str],
) -> list[Diagnostic]:
    out: list[Diagnostic] = []

    def shown_path(rel: str) -> str:
        return f"{shown}/{rel}" if shown else rel

    for entry in files:
        rel = entry.rel
        runnable = bool(entry.mode & 0o111)
        suffix = _suffix(rel)
        if rel in executed and suffix in _SCRIPT_SUFFIXES:  # a Markdown or JSON file is read, not run
            where, line, _ = executed[rel]
            head = _head(folder / rel)
            if head is None:
                continue  # unreadable: SK234 already says so
            cited = f"{where.rsplit('/', 1)[-1]}:{line}"
            if not head.startswith(b"#!") and not head.startswith(_BINARY_MAGIC):
                if suffix in SHEBANGS:
                    fix = f"add '{SHEBANGS[suffix]}' as its first line, or run it as `{INTERPRETERS[suffix]} {rel}`"
                else:
                    fix = "run it through its interpreter in the instructions instead (the system cannot tell how to run it)"
                out.append(Diagnostic("SK221", f"{rel} is run directly ({cited}) but has no shebang line; {fix}", shown_path(rel), 1, 1))
            if not runnable:
                out.append(
                    Diagnostic(
                        "SK222",
                        f"{rel} is run directly ({cited}) but is not executable; run: chmod +x {rel} "
                        f"(in git: git update-index --chmod=+x {rel})",
                        shown_path(rel),
                    )
                )
        elif not runnable and rel not in interpreted and suffix in _SCRIPT_SUFFIXES and entry.size > 2:
            head = _head(folder / rel)
            if head is not None and head.startswith(b"#!"):
                run = f"`{INTERPRETERS[suffix]} {rel}`" if suffix in INTERPRETERS else "its interpreter"
                out.append(
                    Diagnostic(
                        "SK222",
                        f"{rel} starts with a shebang but is not executable; run: chmod +x {rel} "
                        f"(in git: git update-index --chmod=+x {rel}), or drop the shebang if it is only run as {run}",
                        shown_path(rel),
                    )
                )
    return out
