"""Staging task inputs as files in the sandbox (MISSION D5): the model reads them with shell
commands instead of having them pasted into the prompt."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Sequence

from skillctl.errors import SkillctlError
from skillctl.fsutil import tar_data_filter

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


MAX_OUTPUT_FILES = 10_000


def extract_outputs(tar_bytes: bytes, dest: Path, *, max_bytes: int = MAX_INPUT_BYTES, max_files: int = MAX_OUTPUT_FILES) -> list[str]:
    """Unpack a tar copied out of the sandbox into ``dest``; returns the files written.

    The archive was written by whatever ran in the sandbox, so it is hostile: only regular files
    and folders are written (links, devices and fifos are skipped), no member may leave ``dest``,
    and sizes and counts are capped — all checked before the first file is written, so a refused
    archive leaves ``dest`` as it was. ``tarfile``'s ``data`` filter runs on top of these checks.
    The top folder of the archive (``workspace/``) is stripped.
    """
    import posixpath

    root = dest.resolve()
    chosen: list[tuple[tarfile.TarInfo, str]] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
            members = tar.getmembers()
            if len(members) > max_files:
                raise SkillctlError(f"the sandbox's output has {len(members)} entries; the limit is {max_files}")
            for m in members:
                raw = m.name.split("/")
                if posixpath.isabs(m.name) or ".." in raw or not (m.isfile() or m.isdir()):
                    continue  # escapes, links, devices: never written
                parts = posixpath.normpath(m.name).split("/")
                rel = "/".join(parts[1:])  # strip "workspace/"
                target = (root / rel).resolve()
                if not rel or (root not in target.parents and target != root):
                    continue
                total += m.size
                if total > max_bytes:
                    raise SkillctlError(f"the sandbox's output exceeds {max_bytes >> 20} MiB; copy less out")
                chosen.append((m, rel))
            dest.mkdir(parents=True, exist_ok=True)
            written: list[str] = []
            for m, rel in chosen:
                m.name = rel
                tar.extract(m, root, **tar_data_filter())
                if m.isfile():
                    written.append(rel)
    except (OSError, tarfile.TarError) as exc:
        raise SkillctlError(f"cannot copy the sandbox's output into {dest}: {getattr(exc, 'strerror', None) or exc}") from None
    return written
