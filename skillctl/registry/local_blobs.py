"""The folder registry's blob store: bundle bytes named by their sha256.

    blobs/sha256/<hex>     bundle bytes
    tmp/                   blobs being written (same file system, so rename is atomic)
    lost+found/sha256/     blobs ``rebuild-index`` could not index

A blob is written to tmp/, fsynced and renamed in, so it is complete or absent. Blobs are read
as hostile (``blobfile``): never through a link, never from a FIFO or device, never more than
the recorded size plus one byte, and they must hash to their name.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from skillctl.bundle import sha256_digest
from skillctl.errors import IntegrityError, RegistryError
from skillctl.fsutil import fsync_dir
from skillctl.registry.blobfile import NotRegularFile, read_regular


# Blobs ``rebuild-index`` could not index: kept, out of gc's reach (it only looks in blobs/).
LOST_FOUND = "lost+found"


class BlobFault(Exception):
    """A blob that cannot be used; ``kind`` is what ``verify`` reports."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def atomic_write(tmp_dir: Path, target: Path, data: bytes) -> None:
    """``target`` holds ``data`` or is as it was: written in ``tmp_dir``, fsynced, renamed in."""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    tmp = tmp_dir / f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}.part"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(target.parent)


class BlobStore:
    def __init__(self, root: Path, max_blob: int) -> None:
        self.root, self.max_blob = root, max_blob
        self.folder = root / "blobs" / "sha256"
        self.tmp = root / "tmp"

    def path(self, digest: str) -> Path:
        algo, _, hexd = digest.partition(":")
        if algo != "sha256" or len(hexd) != 64 or not all(c in "0123456789abcdef" for c in hexd):
            raise IntegrityError(f"malformed digest '{digest}'")
        return self.folder / hexd

    def store(self, data: bytes, digest: str) -> None:
        path = self.path(digest)
        try:
            if read_regular(path, len(data)) == data:
                os.utime(path, follow_symlinks=False)  # fresh mtime: gc's grace period now covers this publish
                return
        except OSError:
            pass  # absent, damaged, unreadable, a link or a FIFO: (re)written below, atomically
        try:
            atomic_write(self.tmp, path, data)
        except OSError as exc:
            raise RegistryError(f"cannot store blob {digest} in {self.root}: {exc.strerror or exc}") from None

    def read_checked(self, digest: str, limit: int) -> bytes:
        """The blob's bytes if it is a regular file of at most ``limit`` bytes hashing to
        ``digest``; else ``BlobFault`` naming the kind of damage (verify reports the kind)."""
        path = self.path(digest)
        try:
            data = read_regular(path, limit)
        except FileNotFoundError:
            raise BlobFault("missing", f"blob {digest} is missing") from None
        except NotRegularFile as exc:
            raise BlobFault("unsafe", f"blob {digest} is {exc.what}, not a regular file; it was not read") from None
        except OSError as exc:
            raise BlobFault("unreadable", f"blob {digest}: {exc.strerror or exc}") from None
        if len(data) > limit:
            raise BlobFault("size", f"blob {digest} is larger than its recorded {limit} bytes; it was not used")
        actual = sha256_digest(data)
        if actual != digest:
            raise BlobFault("corrupt", f"blob {digest} is corrupt (its content hashes to {actual}); it was not used")
        return data

    def read(self, digest: str, size: int | None = None) -> bytes:
        """The bytes of blob ``digest``: at most ``size`` (its recorded size; default: the bundle
        size limit) plus one byte are read, and they must hash to ``digest``."""
        try:
            return self.read_checked(digest, self.max_blob if size is None else size)
        except BlobFault as fault:
            raise IntegrityError(f"{fault.message} in {self.root} — run: skillctl registry verify --registry {self.root}") from None
