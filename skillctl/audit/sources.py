"""What gets audited: a skill's files as bytes, read from a folder or a checked bundle.

Nothing here runs or imports skill code: files are read as bytes, and only that many bytes.
A folder walk never follows symbolic links (a link is reported, with its target, instead) and
is capped in depth, entries and bytes, so a hostile or accidental tree cannot stall the audit.
Bundles go through ``read_bundle``: every hostile-archive rule applies before a byte is looked at.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from skillctl.bundle import BundleContents, read_bundle
from skillctl.bundle.members import SKILL_FILE

# The bundle format's own per-file cap: anything that can be packed is read whole.
MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_FILES = 2_000
MAX_TOTAL_BYTES = 100 * 1024 * 1024
MAX_DEPTH = 32
# Metadata of other tools, never part of what an agent reads.
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass(frozen=True)
class SkillSource:
    """One skill's files, ready to audit.

    ``files`` maps POSIX paths relative to the skill root to their bytes (at most
    ``MAX_FILE_BYTES`` each); ``truncated`` names files that were longer; ``links`` are symbolic
    links found in a folder, as (path, target) — never followed; ``skipped`` says what the walk
    left out because of a cap. ``root`` prefixes paths in output so they work from the current
    folder (for a bundle, the top folder its members live in).
    """

    name: str
    source: str
    root: str
    files: Mapping[str, bytes]
    truncated: frozenset[str] = frozenset()
    links: tuple[tuple[str, str], ...] = ()
    skipped: tuple[str, ...] = ()
    digest: str | None = None


def from_bundle_contents(contents: BundleContents, source: str) -> SkillSource:
    # Paths are shown as the archive holds them: under the skill's top folder.
    return SkillSource(name=contents.name, source=source, root=contents.name, files=contents.files, digest=contents.digest)


def from_bundle(data: bytes, source: str | None = None) -> SkillSource:
    """A bundle's files after every hostile-archive check (BundleError when one fails)."""
    contents = read_bundle(data, source=source)
    return from_bundle_contents(contents, source or contents.digest)


def _read_capped(path: Path) -> tuple[bytes, bool]:
    # O_NOFOLLOW: the entry was a regular file when listed; if it was swapped for a link since,
    # refuse rather than read what it points to. O_NONBLOCK: a FIFO must not hang the audit.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    return data[:MAX_FILE_BYTES], len(data) > MAX_FILE_BYTES


def from_folder(folder: Path, shown: str) -> SkillSource:
    """A skill folder's files: every regular file except version-control metadata."""
    files: dict[str, bytes] = {}
    truncated: set[str] = set()
    links: list[tuple[str, str]] = []
    skipped: list[str] = []
    total = 0
    stack: list[tuple[str, int]] = [("", 0)]
    while stack:
        rel_dir, depth = stack.pop()
        try:
            with os.scandir(folder / rel_dir if rel_dir else folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            skipped.append(f"{rel_dir or '.'}: cannot list ({exc.strerror or exc})")
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(f"{rel}: cannot stat ({exc.strerror or exc})")
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    links.append((rel, os.readlink(entry.path)))
                except OSError:
                    links.append((rel, "?"))
                continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name in _SKIPPED_DIRS:
                    continue
                if depth + 1 >= MAX_DEPTH:
                    skipped.append(f"{rel}: deeper than {MAX_DEPTH} levels, not audited")
                    continue
                stack.append((rel, depth + 1))
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if len(files) >= MAX_FILES or total >= MAX_TOTAL_BYTES:
                skipped.append(f"{rel}: over the audit's cap of {MAX_FILES} files / {MAX_TOTAL_BYTES} bytes, not audited")
                continue
            try:
                data, cut = _read_capped(folder / rel)
            except OSError as exc:
                skipped.append(f"{rel}: cannot read ({getattr(exc, 'strerror', None) or exc})")
                continue
            files[rel] = data
            total += len(data)
            if cut:
                truncated.add(rel)
    name = folder.resolve().name if shown in (".", "") else Path(shown).name
    return SkillSource(
        name=name,
        source=shown,
        root=shown if shown not in (".", "") else "",
        files=MappingProxyType(dict(sorted(files.items()))),
        truncated=frozenset(truncated),
        links=tuple(links),
        skipped=tuple(skipped),
    )


def skill_md_of(source: SkillSource) -> bytes | None:
    return source.files.get(SKILL_FILE)
