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


def tar_data_filter() -> dict[str, str]:
    """Keyword arguments that put ``tarfile``'s ``'data'`` extraction filter on top of our own
    member checks, where this Python has it.

    The filter arrived in 3.11.4 (PEP 706); Debian 12's ``python3`` is 3.11.2 and lacks it, and
    passing ``filter=`` there is a ``TypeError``. Every caller checks each member itself first
    (the filter has had bypasses and is never the only guard), so without it nothing is lost
    but the second layer.
    """
    import tarfile

    return {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
