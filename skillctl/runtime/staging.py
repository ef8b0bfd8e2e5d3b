"""Staging task inputs as files in the sandbox (MISSION D5): the model reads them with shell
commands instead of having them pasted into the prompt."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Sequence

from skillctl.errors import SkillctlError

MAX_INPUT_BYTES = 512 * 1024 * 1024


def inputs_tar(paths: Sequence[Path]) -> bytes:
    """A tar of ``paths`` (files or folders), each under its own base name, links refused."""
    buf = io.BytesIO()
    total = 0
    names: set[str] = set()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for p in paths:
            if not p.exists():
                raise SkillctlError(f"input {p} does not exist")
            base = p.resolve().name
            if base in names:
                raise SkillctlError(f"two inputs are named {base}; rename one")
            names.add(base)
            items = [p] if p.is_file() else sorted(x for x in p.rglob("*"))
            if p.is_dir():
                tar.add(p, arcname=base, recursive=False)
            for item in items:
                if item.is_symlink():
                    raise SkillctlError(f"input {item} is a symbolic link; copy the file itself")
                arc = base if item == p else f"{base}/{item.relative_to(p).as_posix()}"
                if item.is_dir():
                    tar.add(item, arcname=arc, recursive=False)
                elif item.is_file():
                    total += item.stat().st_size
                    if total > MAX_INPUT_BYTES:
                        raise SkillctlError(f"inputs exceed {MAX_INPUT_BYTES >> 20} MiB; stage less or use a smaller sample")
                    info = tar.gettarinfo(str(item), arcname=arc)
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    info.mode = 0o755 if os.access(item, os.X_OK) else 0o644
                    with open(item, "rb") as fh:
                        tar.addfile(info, fh)
    return buf.getvalue()
