"""Signatures in the folder registry: a table beside ``versions`` in ``index.sqlite``.

    signatures(skill_id, public, envelope_digest, digest, envelope, created_at)

One row per envelope kept with a version, keyed by the version and the sha256 of the envelope
bytes (the same envelope is kept once; any number of different ones, up to a cap). ``digest`` is
the bundle digest the version had when the envelope was attached. The rows belong to the version
(``ON DELETE CASCADE``): ``remove`` takes them along, ``set_yanked`` leaves them alone.

Registries made before signatures existed get the table when they are next opened (schema 3 adds
it with ``CREATE TABLE IF NOT EXISTS``; nothing else changes, and older skillctl versions, which
only check for a lower schema, keep reading the folder).
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from skillctl.bundle import sha256_digest
from skillctl.protocols import ResolvedSkill
from skillctl.registry.records import Problem
from skillctl.registry.signatures import MAX_SIGNATURES_PER_VERSION, check_envelope, check_same_bundle, too_many
from skillctl.versioning import SemVer

if TYPE_CHECKING:
    from skillctl.registry.records import VersionRecord

SIGNATURES_SCHEMA = """
CREATE TABLE IF NOT EXISTS signatures (
    skill_id        TEXT NOT NULL,
    public          TEXT NOT NULL,
    envelope_digest TEXT NOT NULL,
    digest          TEXT NOT NULL,
    envelope        BLOB NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (skill_id, public, envelope_digest),
    FOREIGN KEY (skill_id, public) REFERENCES versions (skill_id, public) ON DELETE CASCADE
);
"""


class SignatureTable:
    """The signature half of ``LocalRegistry`` (which provides ``conn`` — returning
    ``sqlite3.Row``s —, ``_tx``, ``resolve_record`` and ``url``)."""

    conn: sqlite3.Connection
    url: str

    def _version_key(self, skill: ResolvedSkill) -> tuple["VersionRecord", str]:
        rec = self.resolve_record(f"{skill.name}@{skill.version}")  # type: ignore[attr-defined]
        check_same_bundle(rec, skill, self.url)
        return rec, SemVer.parse(rec.version).public

    def signatures(self, skill: ResolvedSkill) -> list[bytes]:
        rec, public = self._version_key(skill)
        rows = self.conn.execute(
            "SELECT envelope FROM signatures WHERE skill_id = ? AND public = ? AND digest = ? ORDER BY created_at, rowid",
            (rec.skill_id, public, rec.digest),
        )
        return [bytes(r["envelope"]) for r in rows]

    def attach_signature(self, skill: ResolvedSkill, envelope: bytes) -> str:
        label = f"{skill.name}@{skill.version}"
        env_digest = check_envelope(envelope, label)
        rec, public = self._version_key(skill)
        with self._tx(self.conn) as c:  # type: ignore[attr-defined]
            if c.execute(
                "SELECT 1 FROM signatures WHERE skill_id = ? AND public = ? AND envelope_digest = ?",
                (rec.skill_id, public, env_digest),
            ).fetchone():
                return "unchanged"
            count = c.execute("SELECT COUNT(*) FROM signatures WHERE skill_id = ? AND public = ?", (rec.skill_id, public)).fetchone()[0]
            if count >= MAX_SIGNATURES_PER_VERSION:
                raise too_many(label)
            c.execute(
                "INSERT INTO signatures (skill_id, public, envelope_digest, digest, envelope, created_at) VALUES (?,?,?,?,?,?)",
                (rec.skill_id, public, env_digest, rec.digest, envelope, int(time.time())),
            )
        return "attached"

    def _verify_signatures(self) -> list[Problem]:
        """Each kept envelope must still hash to the digest it is kept under."""
        problems = []
        for row in self.conn.execute(
            "SELECT skill_id, public, envelope_digest, envelope FROM signatures ORDER BY skill_id, public, envelope_digest"
        ):
            actual, kept = sha256_digest(bytes(row["envelope"])), row["envelope_digest"]
            if actual != kept:
                problems.append(Problem("error", "signature", f"{row['skill_id']} {row['public']}: signature {kept[:19]}… hashes to {actual[:19]}…"))
        return problems
