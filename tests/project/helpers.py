"""Builders shared by the project-layer tests: verified skill contents made from real folders."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from registry.helpers import write_skill

from skillctl.bundle import pack, read_bundle
from skillctl.bundle.read import BundleContents


def contents_of(workdir: Path, name: str = "demo", version: str = "1.0.0", **kwargs: Any) -> BundleContents:
    """The checked contents of a real skill folder written under ``workdir/src-VERSION``."""
    folder = write_skill(workdir / f"src-{version}", name, version, **kwargs)
    return read_bundle(pack(folder, name).data, expected_name=name)


def provenance(contents: BundleContents, version: str = "1.0.0") -> dict[str, Any]:
    return {
        "source": {"kind": "registry", "location": "/srv/skills"},
        "version": version,
        "revision": "skill_0123456789abcdef01234567",
        "tar_digest": contents.tar_digest,
    }


def tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` (links not followed) with what it is: the bytes' length for a
    file, "dir", or "link -> TARGET"; for comparing a folder before and after."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = f"link -> {os.readlink(path)}"
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
            else:
                out[rel] = f"{st.st_size} bytes {path.read_bytes()[:40]!r}"
    return out
