"""File-system durability helpers shared by the bundle writer, the extractor and the registry."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in ``path`` durable. Best effort: some platforms (Windows)
    cannot open folders; there the rename itself is still atomic."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
