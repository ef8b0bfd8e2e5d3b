"""Which files of a skill folder are not part of the skill.

Two sources: ``.skillignore`` (gitignore syntax, evaluated with pathspec, which implements git's
wildmatch rules) and a built-in list of OS/editor/VCS junk that is never packed. The validator
and the bundler both ask this module, so "what gets packed" and "what gets checked" agree.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IGNORE_FILE = ".skillignore"
# Never part of a skill: VCS metadata, caches, OS and editor droppings.
JUNK_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".mypy_cache", ".venv", "node_modules"})
JUNK_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini", ".directory"})
JUNK_SUFFIXES = (".pyc", ".pyo", "~", ".swp", ".swo")
JUNK_PREFIXES = ("._",)  # AppleDouble files


def is_junk(name: str, is_dir: bool) -> bool:
    if is_dir:
        return name in JUNK_DIRS
    return name in JUNK_FILES or name.endswith(JUNK_SUFFIXES) or name.startswith(JUNK_PREFIXES)


@dataclass(frozen=True)
class IgnoreRules:
    spec: Any  # a pathspec.PathSpec, or None when the skill has no .skillignore

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """True when ``rel`` (POSIX, relative to the skill root) is excluded by .skillignore."""
        if rel == IGNORE_FILE:
            return True  # the rules themselves are not part of the skill
        if self.spec is None:
            return False
        return self.spec.match_file(rel + "/" if is_dir else rel)


def load_ignore_rules(root: Path) -> IgnoreRules:
    """Read ``root/.skillignore`` if present (unreadable or binary → treated as absent by the
    bundler; the validator reports it separately)."""
    path = os.path.join(root, IGNORE_FILE)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):  # missing, a link or a folder: no rules
            return IgnoreRules(None)
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return IgnoreRules(None)
    import pathspec  # only for a skill that has a .skillignore: most do not

    return IgnoreRules(pathspec.GitIgnoreSpec.from_lines(text.splitlines()))
