"""Which member paths a bundle may contain: small predicates shared by packing and reading.

A member path is POSIX, relative, and names one top folder then the file inside it, e.g.
``pdf/scripts/fill.py``. Packing and reading apply the same rules so nothing ``pack`` writes is
refused by ``read_bundle``, and nothing refused on read can be produced by ``pack``.

The rules are stricter than POSIX because bundles are unpacked on macOS and Windows too:

- no ``..``, no absolute paths, no ``.`` or empty components (``a//b``, ``./a``): every path
  names exactly one place under the destination, spelled one way;
- no backslash and no ``:`` in a component: on Windows ``a\\..\\b`` is traversal, ``C:`` resets
  the drive and ``name:stream`` opens an NTFS alternate stream;
- no NUL or other control characters: C-level APIs truncate at NUL, and a newline in a file name
  forges lines in listings and logs;
- paths that differ only in case or Unicode normalisation collide (see :func:`collision_key`).
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from skillctl.bundle.limits import BundleLimits

RULE_NO_DOTDOT = "no '..'"
RULE_NO_ABSOLUTE = "no absolute paths"
RULE_NO_EMPTY = "no '.' or empty path components"
RULE_NO_BACKSLASH = "no backslashes"
RULE_NO_COLON = "no ':' (Windows drives and streams)"
RULE_NO_CONTROL = "no NUL or control characters"
RULE_PATH_LENGTH = "max_path_length"
RULE_DEPTH = "max_depth"
RULE_UTF8 = "UTF-8 paths"


@dataclass(frozen=True)
class PathProblem:
    """Why a path is refused: ``what`` for people, ``rule`` names the rule (stable, for tests)."""

    what: str
    rule: str


def _has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)


def member_path_problem(path: str, limits: BundleLimits) -> PathProblem | None:
    """The first rule ``path`` breaks, or None when it is a safe member path.

    ``path`` is the full member path (top folder included, no trailing slash). Depth counts the
    components below the top folder, so ``pdf/SKILL.md`` has depth 1.
    """
    if path == "":
        return PathProblem("empty path", RULE_NO_EMPTY)
    if _has_control(path):
        return PathProblem("path contains a NUL or control character", RULE_NO_CONTROL)
    if "\\" in path:
        return PathProblem("path contains a backslash", RULE_NO_BACKSLASH)
    if path.startswith("/"):
        return PathProblem("absolute path", RULE_NO_ABSOLUTE)
    parts = path.split("/")
    if ".." in parts:
        return PathProblem("path escapes the bundle folder", RULE_NO_DOTDOT)
    if any(p in ("", ".") for p in parts):
        return PathProblem("path has a '.' or empty component", RULE_NO_EMPTY)
    if any(":" in p for p in parts):
        return PathProblem("path has a ':' (drive letter or stream name)", RULE_NO_COLON)
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from undecodable file names
        return PathProblem("path is not valid UTF-8", RULE_UTF8)
    if len(encoded) > limits.max_path_length:
        return PathProblem(
            f"path is {len(encoded)} bytes long, over the limit of {limits.max_path_length}", RULE_PATH_LENGTH
        )
    if len(parts) - 1 > limits.max_depth:
        return PathProblem(f"path is {len(parts) - 1} levels deep, over the limit of {limits.max_depth}", RULE_DEPTH)
    return None


def collision_key(path: str) -> str:
    """Key under which two paths land on the same file on a case-insensitive or normalising
    file system (macOS, Windows): NFC-normalised, then case-folded.

    ``casefold`` folds a little more than those file systems do (``ß`` → ``ss``); a false
    collision costs an author a rename, a missed one lets the unpacked content depend on the OS.
    """
    return unicodedata.normalize("NFC", path).casefold()


def is_within_directory(directory: Path, target: Path) -> bool:
    """True when ``target`` resolves inside ``directory`` (pip's predicate, defence in depth)."""
    abs_directory = os.path.abspath(directory)
    abs_target = os.path.abspath(target)
    return os.path.commonpath([abs_directory, abs_target]) == abs_directory
