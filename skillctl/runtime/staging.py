"""Moving files between this machine and the sandbox, both ways treated with care.

In: task inputs are staged as files (the model reads them with shell commands
instead of having them pasted into the prompt), as is long-term memory; links are refused and
sizes capped. Out: what comes back (``--output``, memory) was written by whatever ran in the
sandbox, so it is unpacked as a hostile archive (``extract_outputs``)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Sequence

from skillctl.errors import SkillctlError
from skillctl.fsutil import tar_data_filter

MAX_INPUT_BYTES = 512 * 1024 * 1024


class _Packer:
    """Writes files and folders into one tar: links refused, owners blank, modes 0644/0755, and
    a cap on the total size ("what" names the content in the messages)."""

    def __init__(self, tar: tarfile.TarFile, what: str, max_bytes: int) -> None:
        self.tar, self.what, self.max_bytes, self.total = tar, what, max_bytes, 0

    def add_tree(self, top: Path, arc_base: str) -> None:
        """``top`` (a file or folder) under ``arc_base``; "" puts a folder's contents at the root."""
        items = [top] if top.is_file() else sorted(top.rglob("*"))
        if top.is_dir() and arc_base:
            self._folder(top, arc_base)
        for item in items:
            if item.is_symlink():
                raise SkillctlError(f"{self.what}: {item} is a symbolic link; copy the file itself")
            rel = "" if item == top else item.relative_to(top).as_posix()
            arc = "/".join(part for part in (arc_base, rel) if part)
            if item.is_dir():
                self._folder(item, arc)
            elif item.is_file():
                self._file(item, arc)

    def _folder(self, path: Path, arc: str) -> None:
        info = self.tar.gettarinfo(str(path), arcname=arc)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mode = 0o755
        self.tar.addfile(info)

    def _file(self, path: Path, arc: str) -> None:
        self.total += path.stat().st_size
        if self.total > self.max_bytes:
            raise SkillctlError(f"{self.what} exceed {self.max_bytes >> 20} MiB; stage less or use a smaller sample")
        info = self.tar.gettarinfo(str(path), arcname=arc)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
        with open(path, "rb") as fh:
            self.tar.addfile(info, fh)


def inputs_tar(paths: Sequence[Path]) -> bytes:
    """A tar of ``paths`` (files or folders), each under its own base name, links refused."""
    buf = io.BytesIO()
    names: set[str] = set()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        packer = _Packer(tar, "inputs", MAX_INPUT_BYTES)
        for p in paths:
            if not p.exists():
                raise SkillctlError(f"input {p} does not exist")
            base = p.resolve().name
            if base in names:
                raise SkillctlError(f"two inputs are named {base}; rename one")
            names.add(base)
            packer.add_tree(p, base)
    return buf.getvalue()


def folder_tar(folder: Path, *, what: str, max_bytes: int) -> bytes:
    """A tar of what ``folder`` holds, at the archive's root, by the rules of ``inputs_tar``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _Packer(tar, what, max_bytes).add_tree(folder, "")
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
