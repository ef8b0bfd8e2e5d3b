"""Moving files between this machine and the sandbox, both ways treated with care.

In: task inputs are staged as files (the model reads them with shell commands
instead of having them pasted into the prompt), as is long-term memory; links are refused and
sizes capped. Out: what comes back (``--output``, memory) was written by whatever ran in the
sandbox, so it is unpacked as a hostile archive, read as a stream (``extract_outputs``)."""

from __future__ import annotations

import io
import os
import secrets
import shutil
import tarfile
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from skillctl.errors import StagingError

if TYPE_CHECKING:
    from skillctl.bundle.tarscan import TarScanner

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
                raise StagingError(f"{self.what}: {item} is a symbolic link; copy the file itself")
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
            raise StagingError(f"{self.what} exceed {self.max_bytes >> 20} MiB; stage less or use a smaller sample")
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
                raise StagingError(f"input {p} does not exist")
            base = p.resolve().name
            if base in names:
                raise StagingError(f"two inputs are named {base}; rename one")
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


@dataclass
class CopiedOut:
    """What ``extract_outputs`` wrote into its destination (paths relative to it): ``files``,
    in archive order; ``hard_links``: (name, the name whose data it shares), each written as a
    file of its own; ``stripped``: files written without the setuid/setgid bits they had;
    ``skipped``: (name, why) for what was not written (symbolic links, devices, FIFOs, names
    leaving the folder or not UTF-8)."""

    files: list[str] = field(default_factory=list)
    hard_links: list[tuple[str, str]] = field(default_factory=list)
    stripped: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def notes(self, limit: int = 5) -> list[str]:
        """One line per kind of thing worth telling, naming at most ``limit`` of them."""

        def listed(items: list[str]) -> str:
            more = f" and {len(items) - limit} more" if len(items) > limit else ""
            return ", ".join(items[:limit]) + more

        def count(n: int, one: str, many: str) -> str:
            return f"{n} {one if n == 1 else many}"

        notes = []
        if self.hard_links:
            pairs = [f"{name} (= {first})" for name, first in self.hard_links]
            notes.append(f"{count(len(pairs), 'hard link', 'hard links')} copied as separate files: {listed(pairs)}")
        if self.stripped:
            notes.append(f"{count(len(self.stripped), 'file', 'files')} written without setuid/setgid bits: "
                         f"{listed(self.stripped)}")
        if self.skipped:
            what = [f"{name} ({why})" for name, why in self.skipped]
            notes.append(f"{count(len(what), 'entry', 'entries')} not copied: {listed(what)}")
        return notes


def _output_path(name: str) -> tuple[str, str]:
    """Where archive member ``name`` goes below the destination (its top folder, the copied
    folder's own name, stripped; "" for the top folder itself), and why it must be skipped
    ("" when it need not)."""
    if name.startswith("/"):
        return name, "absolute path"
    parts = name.split("/")
    if ".." in parts:
        return name, "path leaves the folder"
    rel = "/".join(p for p in parts[1:] if p not in ("", "."))
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes, kept as surrogates by the lenient reader
        return rel, "name is not UTF-8"
    return rel, ""


def _shown(name: str) -> str:
    """``name`` printable anywhere: undecodable bytes as ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def extract_outputs(archive: bytes | Iterable[bytes], dest: Path, *, max_bytes: int = MAX_INPUT_BYTES,
                    max_files: int = MAX_OUTPUT_FILES) -> CopiedOut:
    """Unpack a tar copied out of the sandbox (bytes, or chunks read as they come) into ``dest``.

    The archive was written from whatever ran in the sandbox, so it is hostile. It is read as a
    stream by the strict tar reader (``skillctl.bundle.tarscan``, lenient only about member
    kinds), never held whole: memory stays flat whatever its size. Only regular files (0644, or
    0755 when executable: never setuid/setgid) and folders are written; a hard link becomes a
    copy of the file it links to, so each name gets its own file; symbolic links, devices,
    FIFOs and names that would leave ``dest`` are skipped. All of these are reported in the
    result. The total size of the files and the number of entries are capped, checked before
    each file's bytes are read. Everything goes to a staging folder first and is moved into
    ``dest`` only once the whole archive was read and accepted, so a refused archive leaves
    ``dest`` as it was. The archive's top folder (``workspace/``) is stripped.
    """
    from skillctl.bundle.limits import BundleLimits
    from skillctl.bundle.members import Refused
    from skillctl.bundle.tarscan import TarScanner

    chunks = [bytes(archive)] if isinstance(archive, (bytes, bytearray)) else archive
    root = dest.resolve()  # a link the user made to their own folder is theirs to follow
    merge = root.is_dir()
    created: list[Path] = []  # folders made for the destination, removed again on failure
    stage: Path | None = None
    try:
        if root.exists() and not merge:
            raise StagingError(f"cannot copy the sandbox's output into {dest}: it exists and is not a folder")
        for folder in reversed([root.parent, *root.parent.parents]):
            if not folder.exists():
                folder.mkdir()
                created.append(folder)
        # Beside the destination (then one rename), or inside an existing one (then a merge).
        stage = (root if merge else root.parent) / f".{root.name}.partial-{secrets.token_hex(4)}"
        stage.mkdir()  # the mode a new destination folder gets (this folder becomes it)
        copied = _unpack(TarScanner(chunks, BundleLimits(), lenient=True), stage, max_bytes, max_files)
        if merge:
            _merge(stage, root)
        else:
            stage.rename(root)
            stage = None
        created.clear()
    except Refused as refused:
        raise StagingError(f"the sandbox's output is not an archive skillctl accepts: {refused}") from None
    except OSError as exc:
        raise StagingError(f"cannot copy the sandbox's output into {dest}: {exc.strerror or exc}") from None
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        for folder in reversed(created):
            with suppress(OSError):
                folder.rmdir()
    return copied


def _unpack(scanner: "TarScanner", stage: Path, max_bytes: int, max_files: int) -> CopiedOut:
    """Every member of ``scanner``'s archive into the fresh folder ``stage``, by the rules of
    ``extract_outputs``."""
    from skillctl.bundle.paths import is_within_directory

    copied = CopiedOut()
    written: dict[str, int] = {}  # file -> size, for hard links to it
    total = entries = 0
    while (header := scanner.next_member()) is not None:
        entries += 1
        if entries > max_files:
            raise StagingError(f"the sandbox's output has more than {max_files} entries; the limit is {max_files}")
        rel, why = _output_path(header.path)
        target = stage / rel
        if not why and rel and not is_within_directory(stage, target):
            why = "path leaves the folder"
        if why or not rel:  # a skipped entry, or the top folder itself
            if why:
                copied.skipped.append((_shown(rel), why))
            scanner.skip_data(header)
            continue
        if header.kind == "dir":
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
            continue
        if header.kind == "hard link":
            first, _ = _output_path(header.link)
            scanner.skip_data(header)
            if first not in written:
                copied.skipped.append((rel, f"hard link to {_shown(header.link)}, which was not copied"))
                continue
            total += written[first]
            if total > max_bytes:
                raise StagingError(f"the sandbox's output exceeds {max_bytes >> 20} MiB; copy less out")
            target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            shutil.copyfile(stage / first, target, follow_symlinks=False)
            shutil.copymode(stage / first, target)
            written[rel] = written[first]
            copied.files.append(rel)
            copied.hard_links.append((rel, first))
            continue
        if header.kind != "file":
            scanner.skip_data(header)
            copied.skipped.append((rel, header.kind))
            continue
        total += header.size
        if total > max_bytes:
            raise StagingError(f"the sandbox's output exceeds {max_bytes >> 20} MiB; copy less out")
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            for piece in scanner.iter_data(header):
                fh.write(piece)
        os.chmod(target, 0o755 if header.executable else 0o644)
        if header.mtime is not None:
            with suppress(OverflowError, ValueError):  # a time no file system can hold: left as now
                os.utime(target, (header.mtime, header.mtime))
        if header.mode & 0o6000:
            copied.stripped.append(rel)
        written[rel] = header.size
        copied.files.append(rel)
    scanner.finish()
    return copied


def _merge(stage: Path, root: Path) -> None:
    """Move what ``stage`` holds into the existing folder ``root``: every clash (a file where a
    folder goes or the reverse, a link where a folder goes) is found before anything moves."""
    folders_to_make: list[Path] = []
    moves: list[tuple[Path, Path]] = []
    for here, folders, files in os.walk(stage):
        rel = Path(here).relative_to(stage)
        for name in folders:
            there = root / rel / name
            if there.is_symlink() or (there.exists() and not there.is_dir()):
                raise StagingError(f"cannot copy the sandbox's output: {there} is in the way of a folder")
            folders_to_make.append(there)
        for name in files:
            there = root / rel / name
            if there.is_dir() and not there.is_symlink():
                raise StagingError(f"cannot copy the sandbox's output: the folder {there} is in the way of a file")
            moves.append((Path(here) / name, there))
    for there in folders_to_make:  # parents first (os.walk goes top-down); empty ones too
        there.mkdir(mode=0o755, exist_ok=True)
    for source, there in moves:
        os.replace(source, there)
