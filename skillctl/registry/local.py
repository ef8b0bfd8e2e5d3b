"""The embedded registry: a folder with content-addressed blobs and a SQLite index.

    REGISTRY/
      registry.json          format marker (refuse to write into a random folder)
      index.sqlite           skills and versions (WAL, BEGIN IMMEDIATE, busy timeout)
      blobs/sha256/<hex>     bundle bytes, named by their sha256
      tmp/                   blobs being written (same file system, so rename is atomic)
      lost+found/sha256/     blobs ``rebuild-index`` could not index (kept, never collected)

Signature envelopes live in the index too, beside their version (``local_signatures``).

Crash safety: a blob is written to tmp/, fsynced and renamed into blobs/ *before* the index row
that names it is committed, so a publish killed at any point leaves either nothing visible or a
complete version; the worst leftover is an unreferenced blob, which ``gc`` removes and ``verify``
reports as a warning. Several processes may publish at once: the version check and the insert
happen in one ``BEGIN IMMEDIATE`` transaction.

Creation is atomic and idempotent: the index (with its tables) is made first and the marker
renamed in last, by whichever of several concurrent processes gets there; so a marker always
means a complete index, and a marker without a usable index — missing, empty, not a database,
without tables — means damage. A damaged registry is refused by every command (``gc`` above
all: it would take every blob for garbage), reported by ``verify`` and repaired by
``rebuild_index`` (see ``rebuild``). Damage found later, inside the index, is one line too.

The class composes three parts: ``local_index`` (the SQLite file, its schema and rows read by
name), ``local_blobs`` (the blob store) and ``local_maintenance`` (verify, gc, rebuild-index);
what is here is the folder's life (create, open, refuse) and the registry's operations.

Blobs are read as hostile (``blobfile``): never through a link, never from a FIFO or device,
never more than the recorded size plus one byte. Users who may only read the folder can still
list, show and pull (the index is opened read-only; their fetches are not counted).

Immutability: (skill, version) is written once. Publishing the same bytes again is a no-op;
other bytes under the same version are refused. ``yank`` hides a version from ranges and
``latest`` but keeps it fetchable by exact version. ``remove`` deletes a version only while no one
can depend on it: never fetched and never locked (otherwise yank it).
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from skillctl.bundle import BundleLimits, sha256_digest
from skillctl.errors import ImmutableVersionError, IntegrityError, NoRegistryError, NotFoundError, RegistryError
from skillctl.protocols import WRITE_CAPABILITIES, ResolvedSkill
from skillctl.registry import local_maintenance
from skillctl.registry.local_blobs import LOST_FOUND, BlobStore, atomic_write
from skillctl.registry.local_index import (  # noqa: F401 - SCHEMA_VERSION, new_index: public here too
    COLS, INDEX, NEWEST_FIRST, ORDER_COLS, SAME_VERSION, SCHEMA_VERSION, VCOLS, IndexFile, insert_version,
    new_index, order_of, read_only_error, record, tx,
)
from skillctl.registry.local_maintenance import GC_GRACE_S
from skillctl.registry.local_signatures import SignatureTable
from skillctl.registry.prepare import PreparedBundle
from skillctl.registry.records import Problem, PublishResult, SkillRecord, VersionRecord, check_origin
from skillctl.registry.refs import SkillRef, parse_ref, require_exact
from skillctl.versioning import RELEASE_RANK, SemVer

if TYPE_CHECKING:
    from skillctl.registry.rebuild import RebuildReport

FORMAT = "skillctl-registry"
FORMAT_VERSION = 1
MARKER = "registry.json"
# What a registry folder may hold before its marker exists: a creation in progress, or one that
# stopped between making the index and renaming the marker in.
_LAYOUT = frozenset({"blobs", "tmp", LOST_FOUND, INDEX, f"{INDEX}-wal", f"{INDEX}-shm", f"{INDEX}-journal", MARKER})

_F = TypeVar("_F", bound=Callable[..., Any])


def _index_errors(method: _F) -> _F:
    """SQLite failures of a public method become one line (``IndexFile.error``)."""

    @functools.wraps(method)
    def run(self: "LocalRegistry", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise self.index.error(exc) from None

    return run  # type: ignore[return-value]


class LocalRegistry(SignatureTable):
    """A registry folder on this machine (the embedded default); a ``skillctl.protocols.Registry``
    with every capability — none for a user who may not write the folder (reading still works).

    ``allow_damaged=True`` opens a registry whose index is missing or unusable instead of
    refusing it, for the two commands that deal with exactly that: ``verify`` (which reports it)
    and ``rebuild_index``; everything else then refuses with the same one line.

    The constructor makes a missing folder into a new registry (``create=False``: a
    ``NoRegistryError`` instead) and then calls ``on_create`` with its path, so a command can
    say so. ``skillctl.registry.open_registry``, which readers use, does not create by default.
    """

    def __init__(
        self, root: Path, *, create: bool = True, allow_damaged: bool = False, on_create: Callable[[str], None] | None = None,
    ) -> None:
        self.root = Path(root)
        self._conn: sqlite3.Connection | None = None
        self.damage: str | None = None
        self.readonly = False
        self.blobs = BlobStore(self.root, BundleLimits().max_bundle_size)
        self._on_create = on_create
        self._open(create)
        # a reader may not write the folder: no write capability (lockfiles then skip mark_locked)
        self.capabilities: frozenset[str] = frozenset() if self.readonly else WRITE_CAPABILITIES
        if self.damage is not None and not allow_damaged:
            raise RegistryError(self.damage)

    @property
    def url(self) -> str:
        return str(self.root)

    def __repr__(self) -> str:
        return f"LocalRegistry({str(self.root)!r})"

    @property
    def index_path(self) -> Path:
        return self.root / INDEX

    # ------------------------------------------------------------------ setup

    def _open(self, create: bool) -> None:
        marker = self.root / MARKER
        if self.root.exists() and not self.root.is_dir():
            raise RegistryError(f"{self.root} is a file, not a registry folder; choose a folder path")
        if not marker.exists():
            self._create(create)
        try:
            info = json.loads(marker.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise RegistryError(f"{marker} is unreadable or corrupt ({exc}); restore it or use another folder") from None
        if not isinstance(info, dict) or info.get("format") != FORMAT or not isinstance(info.get("version"), int):
            raise RegistryError(f"{marker} does not describe a skillctl registry")
        if info["version"] > FORMAT_VERSION:
            raise RegistryError(
                f"registry at {self.root} has format {info['version']}; this skillctl reads up to {FORMAT_VERSION} — upgrade skillctl"
            )
        # os.access: a read-only mount counts too, and root is not fooled by missing mode bits there
        self.readonly = not os.access(self.root, os.W_OK) or (self.index_path.exists() and not os.access(self.index_path, os.W_OK))
        if not self.readonly:
            for folder in (self.blobs.tmp, self.blobs.folder):
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise RegistryError(f"cannot create {folder}: {exc.strerror or exc}") from None
        self.index = IndexFile(self.root, MARKER, self.readonly)
        self.reopen()

    def reopen(self) -> None:
        """(Re)connect to the index: after opening, and after ``rebuild_index`` replaced it."""
        self._conn, self.damage = self.index.open()

    def _create(self, create: bool) -> None:
        """Make a new registry, or finish one another process (or a crash) left half made: the
        index with its tables first, the marker last. Every step is idempotent, so several
        processes creating the same folder at once all succeed and agree."""
        try:
            present = set(os.listdir(self.root)) if self.root.exists() else set()
        except OSError as exc:
            raise RegistryError(f"cannot read {self.root}: {exc.strerror or exc}; choose another folder") from None
        if MARKER in present:
            return  # another process finished creating it between our two looks
        if present - _LAYOUT:
            raise RegistryError(f"{self.root} is not a skillctl registry (no {MARKER}) and not empty; choose another folder")
        if not create:
            raise NoRegistryError(str(self.root))
        try:
            self.blobs.folder.mkdir(parents=True, exist_ok=True)
            self.blobs.tmp.mkdir(exist_ok=True)
            new_index(self.index_path).close()
            atomic_write(self.blobs.tmp, self.root / MARKER, json.dumps({"format": FORMAT, "version": FORMAT_VERSION}).encode() + b"\n")
        except OSError as exc:
            raise RegistryError(f"cannot create registry at {self.root}: {exc.strerror or exc}") from None
        except sqlite3.DatabaseError as exc:
            raise RegistryError(f"cannot create registry at {self.root}: its index {self.index_path}: {exc}") from None
        if self._on_create is not None:
            self._on_create(str(self.root))

    def require_writable(self, action: str) -> None:
        if self.readonly:
            raise read_only_error(self.root, action)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "LocalRegistry":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def conn(self) -> sqlite3.Connection:
        if self.damage is not None:
            raise RegistryError(self.damage)
        if self._conn is None:
            raise RegistryError("registry is closed")
        return self._conn

    # The signature table's transactions (``SignatureTable`` uses ``self._tx``).
    _tx = staticmethod(tx)

    # ------------------------------------------------------------------ blobs

    def blob_path(self, digest: str) -> Path:
        return self.blobs.path(digest)

    def read_blob(self, digest: str, size: int | None = None) -> bytes:
        """The bytes of blob ``digest``: at most ``size`` (its recorded size; default: the bundle
        size limit) plus one byte are read, and they must hash to ``digest``."""
        return self.blobs.read(digest, size)

    # ------------------------------------------------------------------ publish

    @_index_errors
    def publish(self, bundle: PreparedBundle, *, created_at: int | None = None, skill_id: str | None = None) -> PublishResult:
        """Store ``bundle``; see ``skillctl.protocols.Registry``. ``created_at`` becomes the
        version's publish time; ``skill_id`` the id of a skill new to this folder, when no other
        skill here has it (ids are per registry, names are what identifies a skill)."""
        sv = SemVer.parse(bundle.version)
        check_origin(created_at, skill_id)
        if sha256_digest(bundle.data) != bundle.digest:
            raise IntegrityError(f"{bundle.name}@{bundle.version}: bundle bytes do not match their digest")
        self.require_writable(f"publish {bundle.name}@{bundle.version}")
        # Read the rows this publish depends on before writing anything: a damaged index fails
        # here, before a blob is stored (the blob still goes first, for crash safety).
        self.conn.execute(
            "SELECT v.digest FROM skills s LEFT JOIN versions v ON v.skill_id = s.id WHERE s.name = ?", (bundle.name,)
        ).fetchall()
        self.blobs.store(bundle.data, bundle.digest)
        now = int(time.time()) if created_at is None else created_at
        with tx(self.conn) as c:
            row = c.execute("SELECT id FROM skills WHERE name = ?", (bundle.name,)).fetchone()
            if row is None:
                taken = skill_id is not None and c.execute("SELECT 1 FROM skills WHERE id = ?", (skill_id,)).fetchone()
                skill_id = skill_id if skill_id is not None and not taken else "skill_" + secrets.token_hex(12)
                c.execute("INSERT INTO skills (id, name, created_at) VALUES (?, ?, ?)", (skill_id, bundle.name, now))
            else:
                skill_id = row["id"]
            existing = c.execute(
                f"SELECT {COLS} FROM versions v JOIN skills s ON s.id = v.skill_id WHERE {SAME_VERSION}",
                (skill_id, *sv.order),
            ).fetchone()
            if existing is not None:
                rec = record(existing)
                if rec.digest == bundle.digest:
                    return PublishResult("unchanged", rec)
                raise ImmutableVersionError(
                    f"{bundle.name}@{rec.version} is already published with other content ({rec.digest[:19]}…, "
                    f"now {bundle.digest[:19]}…); versions are immutable — bump it: skillctl version PATH patch"
                )
            insert_version(c, skill_id, bundle, created_at=now)
            rec = record(
                c.execute(
                    f"SELECT {COLS} FROM versions v JOIN skills s ON s.id = v.skill_id WHERE v.skill_id = ? AND v.public = ?",
                    (skill_id, sv.public),
                ).fetchone()
            )
        return PublishResult("published", rec)

    # ------------------------------------------------------------------ lookup

    def _skill_row(self, ref: SkillRef) -> tuple[str, str]:
        if ref.skill_id:
            row = self.conn.execute("SELECT id, name FROM skills WHERE id = ?", (ref.skill_id,)).fetchone()
        else:
            row = self.conn.execute("SELECT id, name FROM skills WHERE name = ?", (ref.name,)).fetchone()
        if row is None:
            raise NotFoundError(f"no skill '{ref.subject}' in registry {self.url}; see: skillctl list --registry {self.url}")
        return row["id"], row["name"]

    @_index_errors
    def resolve_record(self, ref: str | SkillRef, *, prereleases: bool = False) -> VersionRecord:
        r = parse_ref(ref) if isinstance(ref, str) else ref
        skill_id, name = self._skill_row(r)
        exact = r.exact_version
        if exact is not None:
            sv = SemVer.parse(exact)
            row = self.conn.execute(
                f"SELECT {COLS} FROM versions v JOIN skills s ON s.id = v.skill_id WHERE {SAME_VERSION}",
                (skill_id, *sv.order),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"{name}@{exact} is not published in {self.url}; see: skillctl versions {name}")
            return record(row)
        sql = f"SELECT {VCOLS}, {ORDER_COLS} FROM versions v WHERE v.skill_id = ? AND v.yanked = 0"
        params: list[Any] = [name, skill_id]
        # Both bounds go to the index, so a range that matches nothing reads no rows instead of
        # every version of the skill; the remaining rules (!=, pre-releases) are checked below.
        upper, lower = r.range.upper_bound(), r.range.lower_bound()
        if upper is not None:
            sql += f" AND (v.major, v.minor, v.patch, v.pre_rank, v.pre_num) {'<=' if upper[1] else '<'} (?,?,?,?,?)"
            params += list(upper[0])
        if lower is not None:
            sql += f" AND (v.major, v.minor, v.patch, v.pre_rank, v.pre_num) {'>=' if lower[1] else '>'} (?,?,?,?,?)"
            params += list(lower[0])
        if not (prereleases or r.range.names_prerelease):
            sql += f" AND v.pre_rank = {RELEASE_RANK}"
        for row in self.conn.execute(sql + NEWEST_FIRST, params):
            sv = SemVer.from_order(order_of(row))
            if r.range.matches(sv, prereleases=prereleases):
                return record(row)
        available = [
            row["version"] for row in self.conn.execute(f"SELECT v.version FROM versions v WHERE v.skill_id = ?{NEWEST_FIRST} LIMIT 8", (skill_id,))
        ]
        raise NotFoundError(
            f"no version of {name} matches '{r.range}' in {self.url}"
            + (f" (newest: {', '.join(available)}; yanked versions match only by exact version)" if available else " (it has no versions)")
        )

    @_index_errors
    def resolve(self, ref: str, *, prereleases: bool = False, index_url: str = "") -> ResolvedSkill:
        return self.resolve_record(ref, prereleases=prereleases).resolved()

    @_index_errors
    def fetch(self, skill: ResolvedSkill) -> bytes:
        row = self.conn.execute("SELECT size FROM versions WHERE skill_id = ? AND digest = ?", (skill.id, skill.digest)).fetchone()
        data = self.read_blob(skill.digest, row["size"] if row else skill.size)
        if not self.readonly:  # a reader cannot record its fetch (README: remove cannot see such readers)
            with tx(self.conn) as c:
                c.execute("UPDATE versions SET fetches = fetches + 1 WHERE skill_id = ? AND digest = ?", (skill.id, skill.digest))
        return data

    @_index_errors
    def mark_locked(self, skill: ResolvedSkill) -> None:
        """Count a lock of ``skill``: ``remove`` refuses versions a lockfile may pin."""
        self.require_writable(f"record the lock of {skill.name}@{skill.version}")
        with tx(self.conn) as c:
            c.execute("UPDATE versions SET locks = locks + 1 WHERE skill_id = ? AND digest = ?", (skill.id, skill.digest))

    @_index_errors
    def versions(self, name_or_id: str) -> list[VersionRecord]:
        skill_id, _ = self._skill_row(parse_ref(name_or_id))
        rows = self.conn.execute(
            f"SELECT {COLS} FROM versions v JOIN skills s ON s.id = v.skill_id WHERE v.skill_id = ?" + NEWEST_FIRST,
            (skill_id,),
        )
        return [record(r) for r in rows]

    def _summary(self, skill_id: str, name: str, created_at: int) -> SkillRecord:
        order = NEWEST_FIRST + " LIMIT 1"
        base = f"SELECT {VCOLS} FROM versions v WHERE v.skill_id = ? AND v.yanked = 0"
        latest = self.conn.execute(base + order, (name, skill_id)).fetchone()
        default = self.conn.execute(base + f" AND v.pre_rank = {RELEASE_RANK}" + order, (name, skill_id)).fetchone()
        count = self.conn.execute("SELECT COUNT(*) FROM versions WHERE skill_id = ?", (skill_id,)).fetchone()[0]
        desc_row = default or latest
        return SkillRecord(
            id=skill_id,
            name=name,
            description=record(desc_row).description if desc_row else "",
            created_at=created_at,
            latest_version=record(latest).version if latest else None,
            default_version=record(default).version if default else None,
            versions=count,
        )

    @_index_errors
    def list_skills(self) -> list[SkillRecord]:
        rows = self.conn.execute("SELECT id, name, created_at FROM skills ORDER BY name").fetchall()
        return [self._summary(r["id"], r["name"], r["created_at"]) for r in rows]

    @_index_errors
    def get_skill(self, name_or_id: str) -> SkillRecord:
        skill_id, name = self._skill_row(parse_ref(name_or_id))
        created = self.conn.execute("SELECT created_at FROM skills WHERE id = ?", (skill_id,)).fetchone()[0]
        return self._summary(skill_id, name, created)

    # ------------------------------------------------------------------ lifecycle

    def _exact(self, ref: str, verb: str) -> VersionRecord:
        return self.resolve_record(require_exact(ref, verb))

    # The signature table's methods, with the same one-line SQLite errors and read-only refusal
    # as every other method.
    @_index_errors
    def signatures(self, skill: ResolvedSkill) -> list[bytes]:
        return SignatureTable.signatures(self, skill)

    @_index_errors
    def attach_signature(self, skill: ResolvedSkill, envelope: bytes) -> str:
        self.require_writable(f"sign {skill.name}@{skill.version}")
        return SignatureTable.attach_signature(self, skill, envelope)

    @_index_errors
    def set_yanked(self, ref: str, yanked: bool, reason: str = "") -> VersionRecord:
        rec = self._exact(ref, "yank" if yanked else "unyank")
        self.require_writable(f"{'yank' if yanked else 'unyank'} {rec.name}@{rec.version}")
        with tx(self.conn) as c:
            c.execute(
                "UPDATE versions SET yanked = ?, yank_reason = ? WHERE skill_id = ? AND version = ?",
                (int(yanked), reason if yanked else "", rec.skill_id, rec.version),
            )
        return self._exact(ref, "yank")

    @_index_errors
    def remove(self, ref: str) -> VersionRecord:
        rec = self._exact(ref, "remove")
        self.require_writable(f"remove {rec.name}@{rec.version}")
        with tx(self.conn) as c:
            counts = c.execute(
                "SELECT fetches, locks FROM versions WHERE skill_id = ? AND version = ?", (rec.skill_id, rec.version)
            ).fetchone()
            fetches, locks = counts["fetches"], counts["locks"]
            if fetches or locks:
                raise RegistryError(
                    f"{rec.name}@{rec.version} has been fetched {fetches}× and locked {locks}×, so someone may depend on it; "
                    f"yank it instead: skillctl yank {rec.name}@{rec.version}"
                )
            c.execute("DELETE FROM versions WHERE skill_id = ? AND version = ?", (rec.skill_id, rec.version))
            if c.execute("SELECT COUNT(*) FROM versions WHERE skill_id = ?", (rec.skill_id,)).fetchone()[0] == 0:
                c.execute("DELETE FROM skills WHERE id = ?", (rec.skill_id,))
        return rec

    # ------------------------------------------------------------------ maintenance

    def verify(self) -> list[Problem]:
        """Re-hash every blob and check the index; errors mean something is damaged. A missing
        or unreadable index is reported here too (open with ``allow_damaged``)."""
        return local_maintenance.verify(self)

    @_index_errors
    def gc(self, *, dry_run: bool = False, grace_s: int = GC_GRACE_S) -> list[str]:
        """Remove unreferenced blobs and leftover temp files older than ``grace_s``. Refused
        unless the index passes SQLite's quick check: a damaged index cannot say what is in use."""
        return local_maintenance.gc(self, dry_run=dry_run, grace_s=grace_s)

    def rebuild_index(self, *, progress: Callable[[str], None] | None = None) -> "RebuildReport":
        """Replace a missing or damaged index by one rebuilt from the blobs (see ``rebuild``);
        a healthy index is left alone."""
        return local_maintenance.rebuild_index(self, progress=progress)
