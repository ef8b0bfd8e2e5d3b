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
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar
from urllib.parse import quote

from skillctl.bundle import BundleLimits, sha256_digest
from skillctl.errors import ImmutableVersionError, IntegrityError, NoRegistryError, NotFoundError, RegistryError, UnsupportedError
from skillctl.fsutil import fsync_dir
from skillctl.protocols import WRITE_CAPABILITIES, ResolvedSkill
from skillctl.registry.blobfile import NotRegularFile, read_regular
from skillctl.registry.local_signatures import SIGNATURES_SCHEMA, SignatureTable
from skillctl.registry.prepare import PreparedBundle
from skillctl.registry.records import MirroredFrom, Problem, PublishResult, SkillRecord, VersionRecord, check_origin
from skillctl.registry.refs import SkillRef, parse_ref, require_exact
from skillctl.versioning import RELEASE_RANK, SemVer

if TYPE_CHECKING:
    from skillctl.registry.rebuild import RebuildReport

FORMAT = "skillctl-registry"
FORMAT_VERSION = 1
# 2: versions.mirrored_from (a mirrored well-known artifact's URL and digest, JSON, or '')
# 3: the signatures table (local_signatures)
SCHEMA_VERSION = 3
BUSY_TIMEOUT_S = 30.0
# gc leaves young unreferenced blobs alone: they may belong to a publish in flight.
GC_GRACE_S = 3600

_SCHEMA = """
CREATE TABLE IF NOT EXISTS skills (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS versions (
    skill_id     TEXT NOT NULL REFERENCES skills(id),
    version      TEXT NOT NULL,
    public       TEXT NOT NULL,
    major        INTEGER NOT NULL,
    minor        INTEGER NOT NULL,
    patch        INTEGER NOT NULL,
    pre_rank     INTEGER NOT NULL,
    pre_num      INTEGER NOT NULL,
    description  TEXT NOT NULL,
    front_matter TEXT NOT NULL,
    digest       TEXT NOT NULL,
    tar_digest   TEXT NOT NULL,
    size         INTEGER NOT NULL,
    files        INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    yanked       INTEGER NOT NULL DEFAULT 0,
    yank_reason  TEXT NOT NULL DEFAULT '',
    fetches      INTEGER NOT NULL DEFAULT 0,
    locks        INTEGER NOT NULL DEFAULT 0,
    mirrored_from TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (skill_id, public)
);
CREATE INDEX IF NOT EXISTS versions_order
    ON versions (skill_id, major DESC, minor DESC, patch DESC, pre_rank DESC, pre_num DESC);
CREATE INDEX IF NOT EXISTS versions_digest ON versions (digest);
"""

MARKER = "registry.json"
INDEX = "index.sqlite"
LOST_FOUND = "lost+found"
# What a registry folder may hold before its marker exists: a creation in progress, or one that
# stopped between making the index and renaming the marker in.
_LAYOUT = frozenset({"blobs", "tmp", LOST_FOUND, INDEX, f"{INDEX}-wal", f"{INDEX}-shm", f"{INDEX}-journal", MARKER})
_TABLES = frozenset({"skills", "versions"})

_F = TypeVar("_F", bound=Callable[..., Any])

# A version's identity is its place in the order, not its spelling: "1.0.0+a" and "1.0.0+b",
# or "2.0.0-alpha" and "2.0.0-alpha.0", are one version (one PEP 440 key), so one immutable row.
_SAME_VERSION = "v.skill_id = ? AND v.major = ? AND v.minor = ? AND v.patch = ? AND v.pre_rank = ? AND v.pre_num = ?"

_COLS = "v.skill_id, s.name, v.version, v.description, v.digest, v.tar_digest, v.size, v.files, v.created_at, v.yanked, v.yank_reason, v.front_matter, v.mirrored_from"
_NCOLS = _COLS.count(",") + 1


# The same columns from ``versions`` alone, the skill's name bound as the first parameter.
# Joining ``skills`` in an ordered query lets SQLite put ``skills`` outside the loop and sort
# every version before returning the first: 40 ms instead of 0.03 ms at 10,000 versions.
_VCOLS = _COLS.replace("s.name", "?")
_NEWEST_FIRST = " ORDER BY v.major DESC, v.minor DESC, v.patch DESC, v.pre_rank DESC, v.pre_num DESC"


def _record(row: tuple[Any, ...]) -> VersionRecord:
    return VersionRecord(
        skill_id=row[0], name=row[1], version=row[2], description=row[3], digest=row[4], tar_digest=row[5],
        size=row[6], files=row[7], created_at=row[8], yanked=bool(row[9]), yank_reason=row[10],
        front_matter=json.loads(row[11]), mirrored_from=MirroredFrom.from_dict(json.loads(row[12])) if row[12] else None,
    )


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the index to WAL (persistent, so usually already done). The switch needs an
    exclusive lock, and SQLite can answer "database is locked" at once — without waiting on the
    busy timeout — while another process is opening the same new registry; retry until the
    timeout instead of failing a concurrent first publish."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    delay = 0.01
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def insert_version(conn: sqlite3.Connection, skill_id: str, bundle: PreparedBundle, *, created_at: int, fetches: int = 0) -> None:
    """The row of one version (inside the caller's transaction)."""
    sv = SemVer.parse(bundle.version)
    mj, mn, pt, rank, num = sv.order
    conn.execute(
        "INSERT INTO versions (skill_id, version, public, major, minor, patch, pre_rank, pre_num, description,"
        " front_matter, digest, tar_digest, size, files, created_at, mirrored_from, fetches)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            skill_id, str(sv), sv.public, mj, mn, pt, rank, num, bundle.description,
            json.dumps(bundle.front_matter, sort_keys=True, ensure_ascii=False), bundle.digest, bundle.tar_digest,
            bundle.size, len(bundle.files), created_at,
            json.dumps(bundle.mirrored_from.to_dict(), sort_keys=True) if bundle.mirrored_from else "", fetches,
        ),
    )


def new_index(path: Path) -> sqlite3.Connection:
    """A new, empty index file at ``path`` (WAL, tables made), for ``rebuild``."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    _enable_wal(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    LocalRegistry._ensure_schema(conn)
    return conn


class _BlobFault(Exception):
    """A blob that cannot be used; ``kind`` is what ``verify`` reports."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _index_errors(method: _F) -> _F:
    """SQLite failures of a public method become one line (``LocalRegistry._index_error``)."""

    @functools.wraps(method)
    def run(self: "LocalRegistry", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise self._index_error(exc) from None

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
        self._damage: str | None = None
        self.readonly = False
        self._max_blob = BundleLimits().max_bundle_size
        self._on_create = on_create
        self._open(create)
        # a reader may not write the folder: no write capability (lockfiles then skip mark_locked)
        self.capabilities: frozenset[str] = frozenset() if self.readonly else WRITE_CAPABILITIES
        if self._damage is not None and not allow_damaged:
            raise RegistryError(self._damage)

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
            for folder in (self.root / "tmp", self.root / "blobs" / "sha256"):
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise RegistryError(f"cannot create {folder}: {exc.strerror or exc}") from None
        self._conn, self._damage = self._connect()

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
            (self.root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
            (self.root / "tmp").mkdir(exist_ok=True)
            conn = self._sqlite("rwc")
            try:
                _enable_wal(conn)
                self._ensure_schema(conn)
            finally:
                conn.close()
            self._atomic_write(self.root / MARKER, json.dumps({"format": FORMAT, "version": FORMAT_VERSION}).encode() + b"\n")
        except OSError as exc:
            raise RegistryError(f"cannot create registry at {self.root}: {exc.strerror or exc}") from None
        except sqlite3.DatabaseError as exc:
            raise RegistryError(f"cannot create registry at {self.root}: its index {self.index_path}: {exc}") from None
        if self._on_create is not None:
            self._on_create(str(self.root))

    def _sqlite(self, mode: str) -> sqlite3.Connection:
        """The index, opened with SQLite's URI ``mode`` (rwc / rw / ro): rw never creates it."""
        uri = f"file:{quote(str(self.index_path.absolute()))}?mode={mode}"
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return conn

    @staticmethod
    def _ensure_schema(conn: sqlite3.Connection) -> None:
        with LocalRegistry._tx(conn):
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                for stmt in filter(str.strip, (_SCHEMA + SIGNATURES_SCHEMA).split(";")):
                    conn.execute(stmt)
                # A registry made by an older skillctl: add what its tables lack. Older
                # versions still read it (they name their columns).
                if "mirrored_from" not in {r[1] for r in conn.execute("PRAGMA table_info(versions)")}:
                    conn.execute("ALTER TABLE versions ADD COLUMN mirrored_from TEXT NOT NULL DEFAULT ''")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _damaged(self, detail: str) -> str:
        return (
            f"registry {self.root} is damaged: {self.index_path} is unusable ({detail}) although {MARKER} marks a registry; "
            f"nothing was changed — rebuild the index from the blobs: skillctl registry rebuild-index --registry {self.root} "
            f"(see `skillctl registry verify --registry {self.root}`)"
        )

    def _connect(self) -> tuple[sqlite3.Connection | None, str | None]:
        """(connection, None), or (None, why the index is damaged). The marker exists, so the
        index was complete once: missing, empty or without tables is damage, not a new registry."""
        try:
            size = os.stat(self.index_path).st_size
        except FileNotFoundError:
            return None, self._damaged("it is missing")
        except OSError as exc:
            raise RegistryError(f"cannot read {self.index_path}: {exc.strerror or exc}") from None
        if size == 0:
            return None, self._damaged("it is empty, 0 bytes")
        conn: sqlite3.Connection | None = None
        try:
            conn = self._sqlite("ro" if self.readonly else "rw")
            if self.readonly:
                conn = self._readable(conn)
            else:
                _enable_wal(conn)
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("PRAGMA foreign_keys = ON")
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if not _TABLES <= tables or version < 1:
                conn.close()
                return None, self._damaged("it holds no registry tables")
            if version < SCHEMA_VERSION:
                if self.readonly:
                    conn.close()
                    raise RegistryError(
                        f"registry {self.root} was written by an older skillctl (index schema {version}) and must be upgraded "
                        "once by a user who may write it: run any skillctl command on it as such a user"
                    )
                self._ensure_schema(conn)
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            if "readonly" in str(exc) or "unable to open" in str(exc):
                raise RegistryError(f"cannot open the index {self.index_path}: {exc}") from None
            return None, self._damaged(str(exc))
        return conn, None

    def _readable(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        """A read-only connection that can actually read. Reading a WAL database needs its
        ``-shm`` file: while a writer has the registry open it exists and is shared; otherwise a
        reader who may not create it opens the file as immutable — safe because without a
        ``-wal`` file every committed change is in the main file."""
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            conn.close()
        if (self.root / f"{INDEX}-wal").exists():
            raise RegistryError(
                f"cannot read registry {self.root} read-only right now: its index has changes pending in {INDEX}-wal "
                "that only a user who may write the folder can settle; run any skillctl command on it as such a user"
            )
        return self._sqlite("ro&immutable=1")

    def _index_error(self, exc: sqlite3.DatabaseError) -> RegistryError:
        text = str(exc)
        if "readonly" in text:
            return self._read_only_error("change it")
        if "locked" in text or "busy" in text:
            return RegistryError(f"the index of registry {self.root} stayed locked by another process for {BUSY_TIMEOUT_S:g} s; try again")
        return RegistryError(
            f"the index {self.index_path} of registry {self.root} is damaged ({text}); nothing was changed — "
            f"see `skillctl registry verify --registry {self.root}`, then restore index.sqlite from a backup "
            f"or rebuild it: skillctl registry rebuild-index --registry {self.root}"
        )

    def _read_only_error(self, action: str) -> UnsupportedError:
        return UnsupportedError(
            f"cannot {action}: registry {self.root} is read-only for this user (list, show, versions and pull work); "
            "ask someone who may write the folder"
        )

    def _require_writable(self, action: str) -> None:
        if self.readonly:
            raise self._read_only_error(action)

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
        if self._damage is not None:
            raise RegistryError(self._damage)
        if self._conn is None:
            raise RegistryError("registry is closed")
        return self._conn

    @staticmethod
    @contextmanager
    def _tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (damage, I/O errors)
                conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    # ------------------------------------------------------------------ blobs

    def blob_path(self, digest: str) -> Path:
        algo, _, hexd = digest.partition(":")
        if algo != "sha256" or len(hexd) != 64 or not all(c in "0123456789abcdef" for c in hexd):
            raise IntegrityError(f"malformed digest '{digest}'")
        return self.root / "blobs" / "sha256" / hexd

    def _atomic_write(self, target: Path, data: bytes) -> None:
        tmp_dir = self.root / "tmp"
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

    def _store_blob(self, data: bytes, digest: str) -> None:
        path = self.blob_path(digest)
        try:
            if read_regular(path, len(data)) == data:
                os.utime(path, follow_symlinks=False)  # fresh mtime: gc's grace period now covers this publish
                return
        except OSError:
            pass  # absent, damaged, unreadable, a link or a FIFO: (re)written below, atomically
        try:
            self._atomic_write(path, data)
        except OSError as exc:
            raise RegistryError(f"cannot store blob {digest} in {self.root}: {exc.strerror or exc}") from None

    def _read_blob_file(self, digest: str, limit: int) -> bytes:
        """The blob's bytes if it is a regular file of at most ``limit`` bytes hashing to
        ``digest``; else ``_BlobFault`` naming the kind of damage (verify reports the kind)."""
        path = self.blob_path(digest)
        try:
            data = read_regular(path, limit)
        except FileNotFoundError:
            raise _BlobFault("missing", f"blob {digest} is missing") from None
        except NotRegularFile as exc:
            raise _BlobFault("unsafe", f"blob {digest} is {exc.what}, not a regular file; it was not read") from None
        except OSError as exc:
            raise _BlobFault("unreadable", f"blob {digest}: {exc.strerror or exc}") from None
        if len(data) > limit:
            raise _BlobFault("size", f"blob {digest} is larger than its recorded {limit} bytes; it was not used")
        actual = sha256_digest(data)
        if actual != digest:
            raise _BlobFault("corrupt", f"blob {digest} is corrupt (its content hashes to {actual}); it was not used")
        return data

    def read_blob(self, digest: str, size: int | None = None) -> bytes:
        """The bytes of blob ``digest``: at most ``size`` (its recorded size; default: the bundle
        size limit) plus one byte are read, and they must hash to ``digest``."""
        try:
            return self._read_blob_file(digest, self._max_blob if size is None else size)
        except _BlobFault as fault:
            raise IntegrityError(f"{fault.message} in {self.root} — run: skillctl registry verify --registry {self.root}") from None

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
        self._require_writable(f"publish {bundle.name}@{bundle.version}")
        # Read the rows this publish depends on before writing anything: a damaged index fails
        # here, before a blob is stored (the blob still goes first, for crash safety).
        self.conn.execute(
            "SELECT v.digest FROM skills s LEFT JOIN versions v ON v.skill_id = s.id WHERE s.name = ?", (bundle.name,)
        ).fetchall()
        self._store_blob(bundle.data, bundle.digest)
        now = int(time.time()) if created_at is None else created_at
        with self._tx(self.conn) as c:
            row = c.execute("SELECT id FROM skills WHERE name = ?", (bundle.name,)).fetchone()
            if row is None:
                taken = skill_id is not None and c.execute("SELECT 1 FROM skills WHERE id = ?", (skill_id,)).fetchone()
                skill_id = skill_id if skill_id is not None and not taken else "skill_" + secrets.token_hex(12)
                c.execute("INSERT INTO skills (id, name, created_at) VALUES (?, ?, ?)", (skill_id, bundle.name, now))
            else:
                skill_id = row[0]
            existing = c.execute(
                f"SELECT {_COLS} FROM versions v JOIN skills s ON s.id = v.skill_id WHERE {_SAME_VERSION}",
                (skill_id, *sv.order),
            ).fetchone()
            if existing is not None:
                rec = _record(existing)
                if rec.digest == bundle.digest:
                    return PublishResult("unchanged", rec)
                raise ImmutableVersionError(
                    f"{bundle.name}@{rec.version} is already published with other content ({rec.digest[:19]}…, "
                    f"now {bundle.digest[:19]}…); versions are immutable — bump it: skillctl version PATH patch"
                )
            insert_version(c, skill_id, bundle, created_at=now)
            rec = _record(
                c.execute(
                    f"SELECT {_COLS} FROM versions v JOIN skills s ON s.id = v.skill_id WHERE v.skill_id = ? AND v.public = ?",
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
        return row[0], row[1]

    @_index_errors
    def resolve_record(self, ref: str | SkillRef, *, prereleases: bool = False) -> VersionRecord:
        r = parse_ref(ref) if isinstance(ref, str) else ref
        skill_id, name = self._skill_row(r)
        exact = r.exact_version
        if exact is not None:
            sv = SemVer.parse(exact)
            row = self.conn.execute(
                f"SELECT {_COLS} FROM versions v JOIN skills s ON s.id = v.skill_id WHERE {_SAME_VERSION}",
                (skill_id, *sv.order),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"{name}@{exact} is not published in {self.url}; see: skillctl versions {name}")
            return _record(row)
        sql = f"SELECT {_VCOLS}, v.major, v.minor, v.patch, v.pre_rank, v.pre_num FROM versions v WHERE v.skill_id = ? AND v.yanked = 0"
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
        for row in self.conn.execute(sql + _NEWEST_FIRST, params):
            sv = SemVer.from_order(row[_NCOLS : _NCOLS + 5])
            if r.range.matches(sv, prereleases=prereleases):
                return _record(row[:_NCOLS])
        available = [
            row[0] for row in self.conn.execute(f"SELECT v.version FROM versions v WHERE v.skill_id = ?{_NEWEST_FIRST} LIMIT 8", (skill_id,))
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
        data = self.read_blob(skill.digest, row[0] if row else skill.size)
        if not self.readonly:  # a reader cannot record its fetch (README: remove cannot see such readers)
            with self._tx(self.conn) as c:
                c.execute("UPDATE versions SET fetches = fetches + 1 WHERE skill_id = ? AND digest = ?", (skill.id, skill.digest))
        return data

    @_index_errors
    def mark_locked(self, skill: ResolvedSkill) -> None:
        """Count a lock of ``skill``: ``remove`` refuses versions a lockfile may pin."""
        self._require_writable(f"record the lock of {skill.name}@{skill.version}")
        with self._tx(self.conn) as c:
            c.execute("UPDATE versions SET locks = locks + 1 WHERE skill_id = ? AND digest = ?", (skill.id, skill.digest))

    @_index_errors
    def versions(self, name_or_id: str) -> list[VersionRecord]:
        skill_id, _ = self._skill_row(parse_ref(name_or_id))
        rows = self.conn.execute(
            f"SELECT {_COLS} FROM versions v JOIN skills s ON s.id = v.skill_id WHERE v.skill_id = ?"
            " ORDER BY v.major DESC, v.minor DESC, v.patch DESC, v.pre_rank DESC, v.pre_num DESC",
            (skill_id,),
        )
        return [_record(r) for r in rows]

    def _summary(self, skill_id: str, name: str, created_at: int) -> SkillRecord:
        order = _NEWEST_FIRST + " LIMIT 1"
        base = f"SELECT {_VCOLS} FROM versions v WHERE v.skill_id = ? AND v.yanked = 0"
        latest = self.conn.execute(base + order, (name, skill_id)).fetchone()
        default = self.conn.execute(base + f" AND v.pre_rank = {RELEASE_RANK}" + order, (name, skill_id)).fetchone()
        count = self.conn.execute("SELECT COUNT(*) FROM versions WHERE skill_id = ?", (skill_id,)).fetchone()[0]
        desc_row = default or latest
        return SkillRecord(
            id=skill_id,
            name=name,
            description=_record(desc_row).description if desc_row else "",
            created_at=created_at,
            latest_version=_record(latest).version if latest else None,
            default_version=_record(default).version if default else None,
            versions=count,
        )

    @_index_errors
    def list_skills(self) -> list[SkillRecord]:
        rows = self.conn.execute("SELECT id, name, created_at FROM skills ORDER BY name").fetchall()
        return [self._summary(*r) for r in rows]

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
        self._require_writable(f"sign {skill.name}@{skill.version}")
        return SignatureTable.attach_signature(self, skill, envelope)

    @_index_errors
    def set_yanked(self, ref: str, yanked: bool, reason: str = "") -> VersionRecord:
        rec = self._exact(ref, "yank" if yanked else "unyank")
        self._require_writable(f"{'yank' if yanked else 'unyank'} {rec.name}@{rec.version}")
        with self._tx(self.conn) as c:
            c.execute(
                "UPDATE versions SET yanked = ?, yank_reason = ? WHERE skill_id = ? AND version = ?",
                (int(yanked), reason if yanked else "", rec.skill_id, rec.version),
            )
        return self._exact(ref, "yank")

    @_index_errors
    def remove(self, ref: str) -> VersionRecord:
        rec = self._exact(ref, "remove")
        self._require_writable(f"remove {rec.name}@{rec.version}")
        with self._tx(self.conn) as c:
            fetches, locks = c.execute(
                "SELECT fetches, locks FROM versions WHERE skill_id = ? AND version = ?", (rec.skill_id, rec.version)
            ).fetchone()
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
        problems: list[Problem] = []
        referenced: set[str] | None = set()
        try:
            if self._damage is not None:
                raise _IndexDamage(self._damage)
            ok = self.conn.execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                problems.append(Problem("error", "index", f"SQLite integrity check failed: {' '.join(ok.split())[:300]}"))
            # Rows written by hand or by a tool that left foreign keys off: a version of no skill.
            for table, rowid, parent, _ in self.conn.execute("PRAGMA foreign_key_check"):
                problems.append(Problem("error", "index", f"{table} row {rowid} points to a missing {parent} row"))
            rows = self.conn.execute(f"SELECT {_COLS} FROM versions v JOIN skills s ON s.id = v.skill_id ORDER BY s.name, v.public").fetchall()
            records = [_record(row) for row in rows]
        except (sqlite3.DatabaseError, _IndexDamage) as exc:
            message = str(exc) if isinstance(exc, _IndexDamage) else str(self._index_error(exc))
            problems.append(Problem("error", "index", message))
            referenced, records = None, []  # which blobs are in use is unknown: none is called an orphan
        for rec in records:
            assert referenced is not None
            referenced.add(rec.digest)
            try:
                data = self._read_blob_file(rec.digest, rec.size)
            except _BlobFault as fault:
                problems.append(Problem("error", fault.kind, f"{rec.name}@{rec.version}: {fault.message}"))
                continue
            if len(data) != rec.size:
                problems.append(Problem("error", "size", f"{rec.name}@{rec.version}: size {len(data)} != indexed {rec.size}"))
        if referenced is not None:  # with a damaged index the signatures are unreadable too
            try:
                problems += self._verify_signatures()
            except sqlite3.DatabaseError as exc:
                problems.append(Problem("error", "index", str(self._index_error(exc))))
        for path in sorted((self.root / "blobs" / "sha256").iterdir()):
            if not _is_plain_file(path):
                problems.append(Problem("error", "unsafe", f"blobs/sha256/{path.name} is not a regular file; remove it"))
            elif referenced is not None and f"sha256:{path.name}" not in referenced:
                problems.append(Problem("warning", "orphan", f"blob sha256:{path.name} is not referenced (run: skillctl registry gc)"))
        for path in sorted((self.root / "tmp").iterdir()):
            problems.append(Problem("warning", "temp", f"leftover temporary file {path.name} (an interrupted publish; gc removes it)"))
        return problems

    @_index_errors
    def gc(self, *, dry_run: bool = False, grace_s: int = GC_GRACE_S) -> list[str]:
        """Remove unreferenced blobs and leftover temp files older than ``grace_s``. Refused
        unless the index passes SQLite's quick check: a damaged index cannot say what is in use."""
        if not dry_run:
            self._require_writable("collect garbage")
        check = [row[0] for row in self.conn.execute("PRAGMA quick_check")]
        if check != ["ok"]:
            raise RegistryError(
                f"refusing to collect garbage in {self.root}: its index is damaged (quick_check: {' '.join(check[0].split())[:200]}), so it cannot "
                f"tell which blobs are in use — run skillctl registry verify --registry {self.root}"
            )
        referenced = {r[0] for r in self.conn.execute("SELECT DISTINCT digest FROM versions")}
        cutoff = time.time() - grace_s
        removed: list[str] = []
        candidates = [p for p in (self.root / "blobs" / "sha256").iterdir() if f"sha256:{p.name}" not in referenced]
        candidates += list((self.root / "tmp").iterdir())
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
            removed.append(str(path.relative_to(self.root)))
        return removed

    def rebuild_index(self, *, progress: Callable[[str], None] | None = None) -> "RebuildReport":
        """Replace a missing or damaged index by one rebuilt from the blobs (see ``rebuild``);
        a healthy index is left alone."""
        from skillctl.registry.rebuild import rebuild_index

        self._require_writable("rebuild its index")
        if self._damage is None:
            try:
                healthy = [r[0] for r in self.conn.execute("PRAGMA quick_check")] == ["ok"]
                self.conn.execute("SELECT COUNT(*) FROM versions v JOIN skills s ON s.id = v.skill_id").fetchone()
            except sqlite3.DatabaseError:
                healthy = False
            if healthy:
                raise RegistryError(
                    f"the index of registry {self.root} is healthy; rebuild-index only replaces a missing or damaged one "
                    "(nothing was changed)"
                )
        self.close()
        report = rebuild_index(self.root, progress=progress)
        self._conn, self._damage = self._connect()
        return report


class _IndexDamage(Exception):
    """verify: the index could not be opened (the message is the one-line damage report)."""


def _is_plain_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False
