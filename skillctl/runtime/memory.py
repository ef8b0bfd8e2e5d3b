"""Long-term memory: files that outlive a run, read back through the shell.

Like Anthropic's memory tool (a ``/memories`` folder the model views and edits with file
operations, and is told to check first and to record progress as it goes, since its context may
be reset), but the agent's tool is the shell it already has: the run copies the memory folder
into the sandbox at ``/memory`` before the first prompt, c₁ says so and shows the first lines of
``/memory/MEMORY.md`` (the index), and after the run the folder is copied back out.

Where a memory lives: ``--memory NAME`` is ``<user data dir>/skillctl/memory/NAME/``;
``--memory ./DIR`` (anything with a ``/``, or starting with ``.`` or ``~``) is that folder.
Next to it, never inside (so the agent cannot touch them): ``.NAME.lock``, held for the whole
run, and the folders of an update in progress.

Safety: one run at a time per memory — a second one fails at once, naming the holder, before any
container starts (a lock held by a process that died is released by the kernel). What comes back
is a hostile archive: only regular files and folders, nothing leaving the folder, at most
``MAX_MEMORY_BYTES`` and ``MAX_MEMORY_FILES`` (the container's ``/memory`` is a tmpfs of the same
size) — checked before anything is written, then swapped in whole, so a refused or interrupted
copy leaves the previous memory as it was.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from skillctl.errors import MemoryInUseError, RunMemoryError
from skillctl.runtime.staging import extract_outputs, folder_tar

MEMORY_DIR = "/memory"  # where the agent finds it (a container path; the local backend maps it)
INDEX_FILE = "MEMORY.md"
MAX_MEMORY_BYTES = 64 * 1024 * 1024
MAX_MEMORY_FILES = 10_000
INDEX_LINES = 50  # what c₁ shows of the index, at most
INDEX_CHARS = 4000
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def memory_home() -> Path:
    """Where named memories live."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("skillctl")) / "memory"


def is_path(ref: str | Path) -> bool:
    text = str(ref)
    return isinstance(ref, Path) or "/" in text or text.startswith((".", "~"))


@dataclass(frozen=True)
class Memory:
    """One memory folder (it may not exist yet)."""

    name: str  # NAME, or the path as given
    folder: Path

    @classmethod
    def locate(cls, ref: str | Path) -> "Memory":
        """``NAME`` in the user data folder, or a folder path (``./DIR``, ``/abs``, ``~/x``)."""
        if is_path(ref):
            folder = Path(ref).expanduser().absolute()
            if folder.exists() and not folder.is_dir():
                raise RunMemoryError(f"memory {ref} is a file, not a folder; name a folder")
            return cls(str(ref), folder)
        if not NAME_RE.match(str(ref)):
            raise RunMemoryError(
                f"memory name {str(ref)!r} is not valid: use letters, digits, '.', '_' or '-' (up to 64), "
                "or a folder path such as ./notes"
            )
        return cls(str(ref), memory_home() / str(ref))

    @property
    def _lock_path(self) -> Path:
        return self.folder.parent / f".{self.folder.name}.lock"

    @contextmanager
    def locked(self) -> Iterator["Memory"]:
        """Hold this memory for one run (or a ``clear``); ``MemoryInUseError`` if another holds it."""
        try:
            self.folder.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise RunMemoryError(f"cannot use memory {self.name} at {self.folder}: {exc.strerror or exc}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise MemoryInUseError(
                    f"memory {self.name} is in use by another run ({_holder(fd)}); wait for it to finish or use another --memory"
                ) from None
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": os.getpid(), "since": int(time.time())}).encode())
            self._recover()
            self.folder.mkdir(exist_ok=True)
            yield self
        finally:
            os.close(fd)  # releases the lock

    def _recover(self) -> None:
        """Finish an update a crash interrupted between its two renames (we hold the lock)."""
        olds = sorted(self.folder.parent.glob(f".{self.folder.name}.old-*"))
        if olds and not self.folder.exists():
            olds[-1].rename(self.folder)
            olds = olds[:-1]
        for leftover in olds + sorted(self.folder.parent.glob(f".{self.folder.name}.new-*")):
            shutil.rmtree(leftover, ignore_errors=True)

    # ------------------------------------------------------------------ in and out

    def archive(self) -> bytes:
        """The memory's files as a tar, contents at the root (links refused, size capped)."""
        return folder_tar(self.folder, what=f"memory {self.name}", max_bytes=MAX_MEMORY_BYTES)

    def replace_with(self, archive: bytes | Iterable[bytes]) -> list[str]:
        """Make the memory exactly what ``archive`` (``/memory`` copied out of the sandbox, as
        bytes or chunks) holds, read as a hostile archive and swapped in whole; returns its files."""
        parent, stem = self.folder.parent, self.folder.name
        new = parent / f".{stem}.new-{secrets.token_hex(4)}"
        old = parent / f".{stem}.old-{secrets.token_hex(4)}"
        try:
            files = extract_outputs(archive, new, max_bytes=MAX_MEMORY_BYTES, max_files=MAX_MEMORY_FILES).files
            new.mkdir(exist_ok=True)  # an empty memory is a memory too
            # Two renames, not one: a crash between them leaves `old`, which _recover puts back.
            self.folder.rename(old)
            try:
                new.rename(self.folder)
            except OSError:
                old.rename(self.folder)
                raise
            shutil.rmtree(old, ignore_errors=True)
        except OSError as exc:
            raise RunMemoryError(f"cannot update memory {self.name} in {self.folder}: {exc.strerror or exc}") from None
        finally:
            if new.exists():
                shutil.rmtree(new, ignore_errors=True)
        return sorted(files)

    # ------------------------------------------------------------------ what c₁ shows

    def index_excerpt(self) -> str | None:
        """The first lines of MEMORY.md as c₁ shows them (None when there is none): at most
        ``INDEX_LINES`` lines and ``INDEX_CHARS`` characters, line endings normalised, so the
        same memory gives the same bytes."""
        path = self.folder / INDEX_FILE
        if not path.is_file() or path.is_symlink():
            return None
        limit = INDEX_CHARS * 4  # bytes enough for INDEX_CHARS characters of any script
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
        text = raw[:limit].decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if len(raw) > limit or text.endswith("\n"):
            lines.pop()  # a line cut by the read, or the empty string after the final newline
        shown: list[str] = []
        size = 0
        for line in lines[:INDEX_LINES]:
            if size + len(line) + 1 > INDEX_CHARS:
                break
            shown.append(line)
            size += len(line) + 1
        more = len(raw) > limit or len(shown) < len(lines)
        return "\n".join(shown) + ("\n[… the index goes on: read the whole file]" if more else "")

    # ------------------------------------------------------------------ for `skillctl memory`

    def files(self) -> list[tuple[str, int]]:
        if not self.folder.is_dir():
            return []
        return [(p.relative_to(self.folder).as_posix(), p.stat().st_size)
                for p in sorted(self.folder.rglob("*")) if p.is_file() and not p.is_symlink()]

    def to_dict(self) -> dict[str, Any]:
        files = self.files()
        modified = max((p.stat().st_mtime for p in self.folder.rglob("*")), default=None) if self.folder.is_dir() else None
        return {"name": self.name, "path": str(self.folder), "files": len(files), "bytes": sum(n for _, n in files),
                "modified": int(modified) if modified is not None else None}

    def clear(self) -> int:
        """Forget everything: a named memory is deleted, a memory folder given by path emptied.
        Refused while a run holds the memory. Returns how many files were deleted."""
        with self.locked():
            count = len(self.files())
            shutil.rmtree(self.folder)
            if is_path(self.name):
                self.folder.mkdir()
        return count


def list_memories() -> list[Memory]:
    """The named memories in the user data folder, by name."""
    home = memory_home()
    if not home.is_dir():
        return []
    return [Memory(p.name, p) for p in sorted(home.iterdir()) if p.is_dir() and NAME_RE.match(p.name)]


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 200, 0) or b"{}")
        return f"pid {int(info['pid'])}, since {time.strftime('%H:%M:%S', time.localtime(int(info['since'])))}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"
