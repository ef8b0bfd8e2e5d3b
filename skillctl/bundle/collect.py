"""Which files of a skill folder go into its bundle.

Three filters, in order:

1. Built-in junk, never packed and not overridable (same list as the validator's
   ``skillctl.skill.ignore``): folders ``.git .hg .svn __pycache__ .ipynb_checkpoints
   .pytest_cache .mypy_cache .venv node_modules``; files ``.DS_Store Thumbs.db desktop.ini
   .directory``, names starting with ``._`` (AppleDouble) and names ending in
   ``.pyc .pyo ~ .swp .swo``. Matched by name at any depth.
2. ``.skillignore`` at the folder root (gitignore syntax via pathspec: ``!`` negation, ``dir/``,
   anchored ``/x``, ``**``). As in git, a file inside an excluded folder cannot be re-included.
3. The ignore file itself is not packed: it tells the packer what to leave out and means nothing
   to whoever unpacks the skill (npm treats ``.npmignore`` the same way).

A bundle never contains links or special files, so a symlink, FIFO, socket or device inside the
folder is an error naming the path, not something silently skipped: skipping would ship a skill
that works on the author's machine and breaks everywhere else.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pathspec

from skillctl.errors import BundleError

# One junk list for the validator and the packer, so "what is checked" and "what is packed"
# agree (bundle -> skill is the allowed direction of dependency).
from skillctl.skill.ignore import IGNORE_FILE, is_junk

_ANY_EXEC = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


@dataclass(frozen=True)
class BundleFile:
    """One file that goes into the bundle.

    ``path`` is POSIX and relative to the skill folder; ``source`` is where to read it;
    ``executable`` is true when any execute bit is set on the source (packed as 0755, else 0644).
    """

    path: str
    source: Path
    size: int
    executable: bool


def _special_kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file or folder"


def _load_ignore(folder: Path, ignore_file: str) -> pathspec.PathSpec | None:
    path = folder / ignore_file
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BundleError(f"{path}: cannot read the ignore file ({exc.strerror}); fix its permissions") from None
    if not stat.S_ISREG(st.st_mode):
        raise BundleError(f"{path}: the ignore file is {_special_kind(st.st_mode)}; make it a regular file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError(f"{path}: the ignore file is not UTF-8 text; re-save it as UTF-8") from None
    except OSError as exc:
        raise BundleError(f"{path}: cannot read the ignore file ({exc.strerror}); fix its permissions") from None
    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


def collect_files(folder: Path, *, ignore_file: str = IGNORE_FILE) -> list[BundleFile]:
    """The files that go into ``folder``'s bundle, sorted by POSIX path.

    Never follows symbolic links. Raises BundleError naming the path for a link, FIFO, socket or
    device anywhere in the packed tree (an ignored or junk one is skipped like any ignored
    file), for an unreadable folder or ignore file, and when ``folder`` is not a folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise BundleError(f"{folder}: not a folder; give the path of a skill folder")
    spec = _load_ignore(folder, ignore_file)
    found: list[BundleFile] = []
    # Iterative walk: no recursion limit on deep trees; links are never followed.
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        here = folder / rel_dir if rel_dir else folder
        try:
            with os.scandir(here) as it:
                entries = list(it)
        except OSError as exc:
            raise BundleError(f"{here}: cannot list folder ({exc.strerror}); fix its permissions") from None
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                raise BundleError(f"{folder / rel}: cannot stat ({exc.strerror})") from None
            mode = st.st_mode
            if stat.S_ISDIR(mode):
                if is_junk(entry.name, True) or (spec is not None and spec.match_file(rel + "/")):
                    continue
                pending.append(rel)
            elif stat.S_ISREG(mode):
                if is_junk(entry.name, False) or rel == ignore_file:
                    continue
                if spec is not None and spec.match_file(rel):
                    continue
                found.append(BundleFile(rel, folder / rel, st.st_size, bool(mode & _ANY_EXEC)))
            else:
                if is_junk(entry.name, False) or (spec is not None and spec.match_file(rel)):
                    continue
                raise BundleError(
                    f"{folder / rel}: {_special_kind(mode)}; a bundle holds only regular files and folders, "
                    f"so replace it with a copy or list it in {ignore_file}"
                )
    found.sort(key=lambda f: f.path)
    return found
