"""Shebang and run-bit checks, only for files that are executed directly.

A script the instructions run as ``python scripts/x.py`` needs neither a shebang nor a run bit;
most real skills do exactly that. Two things make a file *executed directly*:

- the skill's instructions run it in command position (``scripts/run.sh --in x``,
  ``./scripts/x.py``, ``{baseDir}/scripts/x.sh``): it needs both (SK221, SK222);
- it starts with a shebang — its author meant it to run on its own — yet has no run bit, is
  never run through an interpreter (not by the instructions, not by its own usage text), is no
  test file and no other script of the skill imports or runs it: it needs the run bit (SK222).

The advice fits the file: ``#!/usr/bin/env python3`` for Python, ``#!/usr/bin/env pwsh`` for
PowerShell, and for a file type without a usual interpreter, run it through one instead.
"""

from __future__ import annotations

import posixpath
import re
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


def _head(path: Path, size: int = 4) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return None


def _runs_itself_through_an_interpreter(head: bytes, name: str) -> bool:
    """A script whose own usage text runs it through an interpreter (``uv run x.py``,
    ``python3 x.py``): the shebang is decoration, the run bit is not needed."""
    text = head.decode("utf-8", errors="replace")
    return re.search(rf"\b(python[\d.]*|uv run|uvx|pipx run|node|deno run|bun|bash|sh|pwsh|ruby|perl|npx tsx)\s+(\S*/)?{re.escape(name)}\b", text) is not None


def _used_by_another_script(folder: Path, files: tuple[FileEntry, ...], rel: str) -> bool:
    """Whether another script of the skill names ``rel`` (imports it as a module, or runs it:
    then that script decides how, and the run bit may not matter). Only asked for the few files
    that would otherwise be reported."""
    name = posixpath.basename(rel)
    stem = posixpath.splitext(name)[0]
    pattern = re.compile(rf"\b{re.escape(name)}\b|^\s*(from\s+{re.escape(stem)}\s+import|import\s+{re.escape(stem)}\b)", re.MULTILINE)
    for other in files:
        if other.rel == rel or _suffix(other.rel) not in SHEBANGS:
            continue
        head = _head(folder / other.rel, 65536)
        if head is not None and pattern.search(head.decode("utf-8", errors="replace")):
            return True
    return False


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
        elif not runnable and rel not in interpreted and posixpath.basename(rel) not in interpreted and suffix in _SCRIPT_SUFFIXES and entry.size > 2:
            name = posixpath.basename(rel)
            if name.startswith("test_") or posixpath.splitext(name)[0].endswith("_test"):
                continue  # a test file: the test runner runs it
            head = _head(folder / rel, 4096)
            if (
                head is not None
                and head.startswith(b"#!")
                and not _runs_itself_through_an_interpreter(head, name)
                and not _used_by_another_script(folder, files, rel)
            ):
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
