"""Finding skills where projects keep them, the way agent clients look for them.

A PATH is a ``SKILL.md``, a skill folder, or a folder searched for skills. The search follows the
client implementation guide of agentskills.io ("Adding skills support" → "What to scan for"):
folders holding a file named ``SKILL.md``; skip folders that cannot hold skills; bounded depth
and folder count ("max depth of 4-6 levels, max 2000 directories") — Codex uses exactly 6 and
2000 — and say so when a bound is reached instead of silently finding less.

Hidden folders are searched: that is where projects keep skills (``.agents/skills``,
``.claude/skills``, ``.github/skills``, ``.codex/skills``, openai/skills' ``skills/.curated``).
Never searched: version-control metadata, caches, dependency trees and virtual environments
(``node_modules``, ``.venv``, any folder holding ``pyvenv.cfg``) — they hold no skills of the
project's own and can be huge. A skill folder is not searched further: a ``SKILL.md`` below it is
one of its files (as OpenClaw's grouped discovery and Claude Code's install treat it). Symbolic
links are not followed below the PATH (no loops, nothing outside the tree).

``pack``, ``publish`` and ``validate`` all use this module, so they agree on what "every skill
under PATH" means.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from skillctl.fsutil import lstat_is
from skillctl.skill.diagnostics import Diagnostic

MAX_SEARCH_DEPTH = 6
MAX_SEARCH_FOLDERS = 2000
# Folders that never hold a project's skills.
SKIPPED_FOLDERS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", "CVS",  # version control
        "node_modules", "bower_components", ".pnpm-store", ".yarn", "site-packages", "__pypackages__",  # dependencies
        ".venv", "venv", ".tox", ".nox", ".conda",  # environments
        "__pycache__", ".cache", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", ".eggs",  # caches
        ".gradle", ".terraform", ".next", ".nuxt", ".turbo", ".parcel-cache",
    }
)


@dataclass(frozen=True)
class SearchLimits:
    depth: int = MAX_SEARCH_DEPTH
    folders: int = MAX_SEARCH_FOLDERS


@dataclass(frozen=True)
class Found:
    """A skill folder found (``folder``), or a problem or note about the search (``problem``)."""

    folder: Path | None
    shown: str
    problem: Diagnostic | None = None

    def __iter__(self) -> Iterator:  # unpacks as (folder, shown, problem)
        return iter((self.folder, self.shown, self.problem))


class Excludes:
    """``--exclude`` patterns, in gitignore syntax, matched against paths relative to the PATH
    searched (``drafts``, ``skills/experimental/``, ``**/fixtures``)."""

    def __init__(self, patterns: Sequence[str] = ()) -> None:
        self.patterns = tuple(patterns)
        self._spec = None
        if self.patterns:
            import pathspec  # only when asked for: validating one skill should not pay for it

            self._spec = pathspec.GitIgnoreSpec.from_lines(self.patterns)

    def excluded(self, rel: str) -> bool:
        return self._spec is not None and self._spec.match_file(rel + "/")


def _is_skipped(entry: os.DirEntry) -> bool:
    if entry.name in SKIPPED_FOLDERS:
        return True
    try:
        return os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))  # a virtual environment by any name
    except OSError:
        return False


def _listing_has_skill_md(names: Sequence[str]) -> bool:
    return any(n.lower() == "skill.md" for n in names)


def _cannot_access(path: Path, shown: str, exc: OSError) -> Found:
    if exc.errno == errno.ELOOP:
        return Found(None, shown, Diagnostic("SK012", "path is a symbolic-link loop", shown))
    if isinstance(exc, FileNotFoundError):
        return Found(None, shown, Diagnostic("SK012", "no such file or folder", shown))
    return Found(None, shown, Diagnostic("SK011", f"cannot access: {exc.strerror or exc}", shown))


def discover(path: Path, exclude: Excludes | Sequence[str] = (), limits: SearchLimits = SearchLimits()) -> Iterator[Found]:
    """Skill folders under ``path``, sorted by path components (``skills/a`` before ``skills/b``
    before ``skills/group/c``), then problems and notes about the search itself."""
    excludes = exclude if isinstance(exclude, Excludes) else Excludes(exclude)
    shown = str(path)
    try:
        st = path.stat()  # follows the link the user named explicitly
    except OSError as exc:
        yield _cannot_access(path, shown, exc)
        return
    if not stat.S_ISDIR(st.st_mode):
        if path.name.lower() == "skill.md":
            parent = path.parent
            yield Found(parent, str(parent) if str(path) != path.name else ".")
        else:
            yield Found(None, shown, Diagnostic("SK012", "not a skill: give a skill folder, its SKILL.md, or a folder of skills", shown))
        return
    try:
        top = os.listdir(path)
    except OSError as exc:
        yield Found(None, shown, Diagnostic("SK011", f"cannot list folder: {exc.strerror or exc}", shown))
        return
    if _listing_has_skill_md(top):
        yield Found(path, shown)
        return
    yield from _search(path, shown, excludes, limits)


def _search(root: Path, shown: str, excludes: Excludes, limits: SearchLimits) -> Iterator[Found]:
    # Breadth first, like the clients: when the folder budget runs out, the shallow folders —
    # where skills live — have been searched.
    found: list[Found] = []
    problems: list[Found] = []
    queue: deque[tuple[Path, str, int]] = deque([(root, "", 0)])
    visited = 0
    too_deep: list[str] = []
    stopped = False
    while queue:
        current, rel, level = queue.popleft()
        try:
            with os.scandir(current) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append(Found(None, str(current), Diagnostic("SK011", f"cannot list folder: {exc.strerror or exc}", str(current))))
            continue
        for entry in children:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            if _is_skipped(entry) or excludes.excluded(child_rel):
                continue
            if visited >= limits.folders:
                stopped = True
                break
            visited += 1
            child = Path(entry.path)
            try:
                names = os.listdir(child)
            except OSError as exc:
                problems.append(Found(None, str(child), Diagnostic("SK011", f"cannot list folder: {exc.strerror or exc}", str(child))))
                continue
            if _listing_has_skill_md(names):
                found.append(Found(child, str(child)))
            elif level + 1 < limits.depth:
                queue.append((child, child_rel, level + 1))
            elif any(n not in SKIPPED_FOLDERS and lstat_is(child / n, stat.S_ISDIR) for n in names):
                too_deep.append(child_rel)
        if stopped:
            break
    yield from sorted(found + problems, key=lambda f: Path(f.shown).parts)
    if stopped:
        yield Found(
            None,
            shown,
            Diagnostic(
                "SK237",
                f"searched {limits.folders} folders and stopped: skills further in were not looked for — give a narrower PATH "
                "or leave folders out with --exclude",
                shown,
            ),
        )
    if too_deep:
        yield Found(
            None,
            shown,
            Diagnostic(
                "SK302",
                f"did not search below {limits.depth} folder levels ({len(too_deep)} folder{'s' * (len(too_deep) != 1)} not entered, "
                f"e.g. {too_deep[0]}); give a deeper PATH to find skills there",
                shown,
            ),
        )
    # "no skills found" only when the search really happened: if ``root`` itself could not be
    # listed, the SK011 above says everything.
    if not found and not any(f.shown == shown and f.problem and f.problem.code == "SK011" for f in problems):
        yield Found(None, shown, Diagnostic("SK012", "no skills found: no folder here contains a SKILL.md", shown))


def owning_skills(paths: Sequence[Path], max_levels: int = MAX_SEARCH_DEPTH + 2) -> list[Path]:
    """The skill folders that hold ``paths`` (changed files, as a pre-commit hook gets them):
    for each, the nearest folder at or above it holding a SKILL.md. Paths in no skill, or in a
    folder that is never searched (``node_modules``…), are left out; each skill comes once."""
    out: list[Path] = []
    seen: set[str] = set()
    for path in paths:
        candidates = [path] if path.is_dir() else []
        candidates += list(path.parents)[:max_levels]
        for folder in candidates:
            if str(folder) in ("", ".") and not (folder / "SKILL.md").exists():
                break  # the top of a relative path: the repository, not a skill
            if any(part in SKIPPED_FOLDERS for part in folder.parts):
                break
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            if _listing_has_skill_md(names):
                key = os.path.abspath(folder)
                if key not in seen:
                    seen.add(key)
                    out.append(folder)
                break
    return out
