"""Scanning a skill folder: the list of its files, and what is wrong with them.

The walk is iterative (no recursion limit on deep trees), never follows symbolic links (no
loops, nothing outside the folder), and is capped in depth and entry count so a hostile or
accidental tree (a node_modules, a checkout of the whole disk) cannot stall validation.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from skillctl.skill.diagnostics import Diagnostic
from skillctl.skill.ignore import IgnoreRules, is_junk

MAX_DEPTH = 32
MAX_ENTRIES = 20_000
LARGE_FILE = 5 * 1024 * 1024


@dataclass(frozen=True)
class FileEntry:
    rel: str  # POSIX path relative to the skill root
    size: int
    mode: int  # st_mode


@dataclass(frozen=True)
class FolderScan:
    files: tuple[FileEntry, ...]
    dirs: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(f.rel for f in self.files)


def scan_folder(root: Path, shown_root: str, ignore: IgnoreRules) -> FolderScan:
    files: list[FileEntry] = []
    dirs: list[str] = []
    diags: list[Diagnostic] = []
    stack: list[tuple[str, int]] = [("", 0)]
    entries = 0
    too_deep_reported = False

    def shown(rel: str) -> str:
        return f"{shown_root}/{rel}" if shown_root else rel

    base = str(root)  # joined as strings: a Path per file costs more than the system call

    while stack:
        rel_dir, depth = stack.pop()
        try:
            with os.scandir(os.path.join(base, rel_dir) if rel_dir else base) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            diags.append(Diagnostic("SK234", f"cannot list folder: {exc.strerror or exc}", shown(rel_dir) or shown_root))
            continue
        for entry in children:
            entries += 1
            if entries > MAX_ENTRIES:
                diags.append(
                    Diagnostic("SK236", f"more than {MAX_ENTRIES} files and folders; stopped scanning — is this really one skill?", shown_root)
                )
                return FolderScan(tuple(files), tuple(dirs), tuple(diags))
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                diags.append(Diagnostic("SK234", f"cannot stat: {exc.strerror or exc}", shown(rel)))
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if ignore.ignored(rel, is_dir):
                continue
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(os.path.join(base, rel)) if hasattr(os, "readlink") else "?"
                diags.append(
                    Diagnostic("SK231", f"symbolic link (-> {target}) is not followed and cannot be packed; replace it with the file itself", shown(rel))
                )
                continue
            if is_junk(entry.name, is_dir):
                diags.append(
                    Diagnostic("SK233", f"{'folder' if is_dir else 'file'} '{entry.name}' is OS/editor/VCS junk; it is never packed — delete it", shown(rel))
                )
                continue
            if entry.name.startswith("."):
                diags.append(
                    Diagnostic("SK233", f"hidden {'folder' if is_dir else 'file'} '{entry.name}' will be packed; delete it or list it in .skillignore", shown(rel))
                )
            if is_dir:
                # depth + 1 is this folder's nesting level: MAX_DEPTH levels are allowed,
                # the first folder deeper than that is reported (and not entered).
                if depth + 1 > MAX_DEPTH:
                    if not too_deep_reported:
                        diags.append(Diagnostic("SK235", f"folders nest deeper than {MAX_DEPTH} levels; not scanned further", shown(rel)))
                        too_deep_reported = True
                    continue
                dirs.append(rel)
                stack.append((rel, depth + 1))
                continue
            if not stat.S_ISREG(st.st_mode):
                diags.append(Diagnostic("SK234", "not a regular file (device, socket or pipe); it cannot be packed", shown(rel)))
                continue
            if st.st_size > LARGE_FILE:
                diags.append(
                    Diagnostic("SK232", f"file is {st.st_size / 1048576:.1f} MiB; files over 5 MiB are refused by registries — keep large data out of skills", shown(rel))
                )
            files.append(FileEntry(rel, st.st_size, st.st_mode))
            # Packing reads every file; say now which one it would fail on (access(), not open():
            # no need to open thousands of files to learn that).
            if not os.access(os.path.join(base, rel), os.R_OK):
                diags.append(Diagnostic("SK234", "cannot read: permission denied; it cannot be packed — make it readable (chmod a+r)", shown(rel)))
    files.sort(key=lambda f: f.rel)
    dirs.sort()
    return FolderScan(tuple(files), tuple(dirs), tuple(diags))

