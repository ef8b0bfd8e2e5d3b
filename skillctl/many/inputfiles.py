"""Input files named by a file of cases or tasks (an eval case's ``files``, a batch line's
``files``), which are staged into a run's workspace and so end up in its transcript.

One rule for both: a name is relative, has no ``..`` and resolves strictly inside the folder
it is relative to (a symbolic link that points out counts as outside), and exists. A tasks file
from someone else must not be able to stage ``~/.ssh/id_ed25519`` into a run.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

OUTSIDE = "outside"
MISSING = "missing"


def locate(root: Path, name: str) -> tuple[Path, str | None]:
    """``root / name``, and None when it is a file or folder inside ``root``, else why not:
    ``OUTSIDE`` (absolute, ``..``, or resolving out of ``root``) or ``MISSING``."""
    path = root / name
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts:
        return path, OUTSIDE
    target = path.resolve()
    if root.resolve() not in target.parents:
        return path, OUTSIDE
    if not target.exists():
        return path, MISSING
    return path, None
