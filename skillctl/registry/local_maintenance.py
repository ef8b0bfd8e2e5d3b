"""Keeping a folder registry sound: ``verify`` (re-hash every blob, check the index), ``gc``
(remove what no version references) and ``rebuild_index`` (replace a lost index, see
``rebuild``). Each takes the open ``LocalRegistry``; what they may do to it is said there."""

from __future__ import annotations

import sqlite3
import stat
import time
from typing import TYPE_CHECKING, Callable

from skillctl.errors import RegistryError
from skillctl.fsutil import lstat_is
from skillctl.registry.local_blobs import BlobFault
from skillctl.registry.local_index import COLS, record
from skillctl.registry.records import Problem

if TYPE_CHECKING:
    from skillctl.registry.local import LocalRegistry
    from skillctl.registry.rebuild import RebuildReport

# gc leaves young unreferenced blobs alone: they may belong to a publish in flight.
GC_GRACE_S = 3600


class _IndexDamage(Exception):
    """verify: the index could not be opened (the message is the one-line damage report)."""


def verify(reg: "LocalRegistry") -> list[Problem]:
    """Re-hash every blob and check the index; errors mean something is damaged. A missing
    or unreadable index is reported here too."""
    problems: list[Problem] = []
    referenced: set[str] | None = set()
    try:
        if reg.damage is not None:
            raise _IndexDamage(reg.damage)
        ok = reg.conn.execute("PRAGMA integrity_check").fetchone()[0]
        if ok != "ok":
            problems.append(Problem("error", "index", f"SQLite integrity check failed: {' '.join(ok.split())[:300]}"))
        # Rows written by hand or by a tool that left foreign keys off: a version of no skill.
        for row in reg.conn.execute("PRAGMA foreign_key_check"):
            problems.append(Problem("error", "index", f"{row['table']} row {row['rowid']} points to a missing {row['parent']} row"))
        rows = reg.conn.execute(f"SELECT {COLS} FROM versions v JOIN skills s ON s.id = v.skill_id ORDER BY s.name, v.public").fetchall()
        records = [record(row) for row in rows]
    except (sqlite3.DatabaseError, _IndexDamage) as exc:
        message = str(exc) if isinstance(exc, _IndexDamage) else str(reg.index.error(exc))
        problems.append(Problem("error", "index", message))
        referenced, records = None, []  # which blobs are in use is unknown: none is called an orphan
    for rec in records:
        assert referenced is not None
        referenced.add(rec.digest)
        try:
            data = reg.blobs.read_checked(rec.digest, rec.size)
        except BlobFault as fault:
            problems.append(Problem("error", fault.kind, f"{rec.name}@{rec.version}: {fault.message}"))
            continue
        if len(data) != rec.size:
            problems.append(Problem("error", "size", f"{rec.name}@{rec.version}: size {len(data)} != indexed {rec.size}"))
    if referenced is not None:  # with a damaged index the signatures are unreadable too
        try:
            problems += reg._verify_signatures()
        except sqlite3.DatabaseError as exc:
            problems.append(Problem("error", "index", str(reg.index.error(exc))))
    for path in sorted(reg.blobs.folder.iterdir()):
        if not lstat_is(path, stat.S_ISREG):
            problems.append(Problem("error", "unsafe", f"blobs/sha256/{path.name} is not a regular file; remove it"))
        elif referenced is not None and f"sha256:{path.name}" not in referenced:
            problems.append(Problem("warning", "orphan", f"blob sha256:{path.name} is not referenced (run: skillctl registry gc)"))
    for path in sorted(reg.blobs.tmp.iterdir()):
        problems.append(Problem("warning", "temp", f"leftover temporary file {path.name} (an interrupted publish; gc removes it)"))
    return problems


def gc(reg: "LocalRegistry", *, dry_run: bool, grace_s: int) -> list[str]:
    """Remove unreferenced blobs and leftover temp files older than ``grace_s``. Refused
    unless the index passes SQLite's quick check: a damaged index cannot say what is in use."""
    if not dry_run:
        reg.require_writable("collect garbage")
    check = [row[0] for row in reg.conn.execute("PRAGMA quick_check")]
    if check != ["ok"]:
        raise RegistryError(
            f"refusing to collect garbage in {reg.root}: its index is damaged (quick_check: {' '.join(check[0].split())[:200]}), so it cannot "
            f"tell which blobs are in use — run skillctl registry verify --registry {reg.root}"
        )
    referenced = {r["digest"] for r in reg.conn.execute("SELECT DISTINCT digest FROM versions")}
    cutoff = time.time() - grace_s
    removed: list[str] = []
    candidates = [p for p in reg.blobs.folder.iterdir() if f"sha256:{p.name}" not in referenced]
    candidates += list(reg.blobs.tmp.iterdir())
    for path in sorted(candidates):
        try:
            info = path.lstat()
            if info.st_mtime > cutoff or stat.S_ISDIR(info.st_mode):  # a folder there is not ours to delete
                continue
            if not dry_run:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise RegistryError(f"cannot remove {path}: {exc.strerror or exc}") from None
        removed.append(str(path.relative_to(reg.root)))
    return removed


def rebuild_index(reg: "LocalRegistry", *, progress: Callable[[str], None] | None) -> "RebuildReport":
    """Replace a missing or damaged index by one rebuilt from the blobs; a healthy one is left alone."""
    from skillctl.registry.rebuild import rebuild_index as rebuild

    reg.require_writable("rebuild its index")
    if reg.damage is None:
        try:
            healthy = [r[0] for r in reg.conn.execute("PRAGMA quick_check")] == ["ok"]
            reg.conn.execute("SELECT COUNT(*) FROM versions v JOIN skills s ON s.id = v.skill_id").fetchone()
        except sqlite3.DatabaseError:
            healthy = False
        if healthy:
            raise RegistryError(
                f"the index of registry {reg.root} is healthy; rebuild-index only replaces a missing or damaged one "
                "(nothing was changed)"
            )
    reg.close()
    report = rebuild(reg.root, progress=progress)
    reg.reopen()
    return report
