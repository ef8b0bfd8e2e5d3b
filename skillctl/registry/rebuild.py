"""Rebuilding a folder registry's index from its blobs, when the index is lost or damaged.

Every blob is a bundle and every bundle holds its SKILL.md, so each blob that is intact (it
hashes to its name), safe to open and a valid skill gives back a version row: name, version
(``metadata.version``), description, front matter, both digests, size and file count. The blob
is read as hostile (``blobfile``, ``read_bundle``) like any other bundle.

What the blobs do not hold comes back otherwise, and the report says so:

- **skill ids**: new ones are made. Lockfiles resolve by name and exact version, so they keep
  working; ids written down elsewhere must be looked up again;
- **publish times**: the blob file's modification time stands in;
- **yank state** (and reasons): lost — versions that were yanked match ranges again;
- **fetch and lock counts**: unknown, so every version counts as fetched once and ``remove``
  refuses it (the rule that protects people who may depend on it);
- a version given only on the command line (``publish --version``, SKILL.md without
  ``metadata.version``) cannot be placed; nor can a blob that is corrupt, not a bundle or not a
  valid skill, or a second blob for a version another (newer) blob already holds. Those are moved
  to ``lost+found/sha256/`` — never deleted, and out of ``gc``'s reach;
- versions removed earlier whose blobs ``gc`` had not collected yet come back.

The old index (and its ``-wal``) is renamed ``index.sqlite.damaged-TIME`` beside the new one, for
salvage (``sqlite3 FILE .recover`` may get yank states back). The new index is built in ``tmp/``
and renamed in last, so an interrupted rebuild leaves a registry that is still "damaged" and can
be rebuilt again. Run it while nobody else uses the registry.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from skillctl.bundle import BundleLimits, sha256_digest
from skillctl.errors import SkillctlError, VersionError
from skillctl.fsutil import fsync_dir
from skillctl.registry.blobfile import NotRegularFile, read_regular
from skillctl.registry.local_blobs import LOST_FOUND
from skillctl.registry.local_index import INDEX, insert_version, new_index
from skillctl.registry.prepare import PreparedBundle, prepare_bundle_bytes
from skillctl.versioning import SemVer

NOT_RECOVERABLE = (
    "skill ids (new ones were made; lockfiles resolve by name and version)",
    "publish times (the blob files' times stand in)",
    "yank state (yank again what was yanked)",
    "fetch and lock counts (every version counts as fetched once, so remove refuses it; yank instead)",
)


@dataclass(frozen=True)
class Recovered:
    name: str
    version: str
    digest: str
    skill_id: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "digest": self.digest, "skill_id": self.skill_id}


@dataclass(frozen=True)
class Unrecovered:
    blob: str  # the file name under blobs/sha256/
    reason: str
    kept_at: str  # where it is now, relative to the registry

    def to_dict(self) -> dict[str, str]:
        return {"blob": self.blob, "reason": self.reason, "kept_at": self.kept_at}


@dataclass(frozen=True)
class RebuildReport:
    registry: str
    recovered: tuple[Recovered, ...]
    unrecovered: tuple[Unrecovered, ...]
    old_index: str | None  # where the replaced index went (None: there was none)

    def to_dict(self) -> dict[str, Any]:
        return {
            "registry": self.registry,
            "recovered": [r.to_dict() for r in self.recovered],
            "unrecovered": [u.to_dict() for u in self.unrecovered],
            "old_index": self.old_index,
            "not_recoverable": list(NOT_RECOVERABLE),
        }


def _read(path: Path, digest: str, limit: int) -> PreparedBundle | str:
    """The blob as a checked bundle, or why it cannot be indexed."""
    try:
        data = read_regular(path, limit)
    except NotRegularFile as exc:
        return f"{exc.what}, not a regular file"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if len(data) > limit:
        return f"larger than the {limit}-byte bundle limit"
    if sha256_digest(data) != digest:
        return "corrupt: its content does not hash to its name"
    try:
        # profile=None: a skill published under a client's profile (--profile) is re-indexed too
        return prepare_bundle_bytes(data, source=f"blob {digest[:19]}…", profile=None)
    except VersionError as exc:
        if "no version" in str(exc):
            return "its SKILL.md has no metadata.version (published with --version, which only the lost index knew)"
        return str(exc)
    except SkillctlError as exc:
        return f"not a usable skill bundle: {exc}"


def rebuild_index(root: Path, *, progress: Callable[[str], None] | None = None) -> RebuildReport:
    """Index every usable blob of the registry folder ``root`` in a new ``index.sqlite``."""
    blobs = root / "blobs" / "sha256"
    limit = BundleLimits().max_bundle_size
    names = sorted(os.listdir(blobs))
    by_version: dict[tuple[str, tuple[int, ...]], list[tuple[float, PreparedBundle]]] = {}
    rejected: list[tuple[str, str]] = []
    for i, name in enumerate(names, 1):
        if progress is not None and (i % 100 == 0 or i == len(names)):
            progress(f"read {i}/{len(names)} blobs")
        path = blobs / name
        got = _read(path, f"sha256:{name}", limit)
        if isinstance(got, str):
            rejected.append((name, got))
            continue
        by_version.setdefault((got.name, SemVer.parse(got.version).order), []).append((path.lstat().st_mtime, got))

    kept: list[tuple[float, PreparedBundle]] = []
    for candidates in by_version.values():
        candidates.sort(key=lambda c: (c[0], c[1].digest), reverse=True)
        kept.append(candidates[0])
        newest = candidates[0][1]
        for _, other in candidates[1:]:
            rejected.append((other.digest.split(":", 1)[1], f"{other.name}@{other.version} again; a newer blob ({newest.digest[:19]}…) holds that version"))

    tmp = root / "tmp" / f"{INDEX}.rebuild.{os.getpid()}.{secrets.token_hex(4)}"
    recovered: list[Recovered] = []
    conn = new_index(tmp)
    try:
        conn.execute("BEGIN IMMEDIATE")
        ids: dict[str, str] = {}
        for mtime, bundle in sorted(kept, key=lambda k: (k[1].name, SemVer.parse(k[1].version).order)):
            if bundle.name not in ids:
                ids[bundle.name] = "skill_" + secrets.token_hex(12)
                first = min(m for m, b in kept if b.name == bundle.name)
                conn.execute("INSERT INTO skills (id, name, created_at) VALUES (?, ?, ?)", (ids[bundle.name], bundle.name, int(first)))
            insert_version(conn, ids[bundle.name], bundle, created_at=int(mtime), fetches=1)
            recovered.append(Recovered(bundle.name, bundle.version, bundle.digest, ids[bundle.name]))
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise
    conn.close()

    unrecovered = [_set_aside(root, name, reason) for name, reason in rejected]
    old = _move_old_index(root)
    os.replace(tmp, root / INDEX)
    fsync_dir(root)
    return RebuildReport(str(root), tuple(recovered), tuple(unrecovered), old)


def _set_aside(root: Path, name: str, reason: str) -> Unrecovered:
    """Move an unindexable blob to lost+found/ (gc deletes what blobs/ holds unreferenced)."""
    source = root / "blobs" / "sha256" / name
    target = root / LOST_FOUND / "sha256" / name
    if source.is_dir() and not source.is_symlink():
        return Unrecovered(name, reason, str(source.relative_to(root)))  # not a blob at all: left where it is
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    return Unrecovered(name, reason, str(target.relative_to(root)))


def _move_old_index(root: Path) -> str | None:
    """Rename the old index and its WAL aside (kept for salvage); its -shm is only a cache."""
    index, wal = root / INDEX, root / f"{INDEX}-wal"
    (root / f"{INDEX}-shm").unlink(missing_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = root / f"{INDEX}.damaged-{stamp}"
    n = 1
    while aside.exists() or (root / f"{aside.name}-wal").exists():
        n += 1
        aside = root / f"{INDEX}.damaged-{stamp}-{n}"
    if wal.exists():
        os.replace(wal, root / f"{aside.name}-wal")
    if not index.exists():
        return None
    os.replace(index, aside)
    return str(aside)
