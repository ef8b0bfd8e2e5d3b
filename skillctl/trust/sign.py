"""Signing a published version: build the attestation, attach it to the version in the registry.

One signature per key and version: when a signature by this key over exactly this name, version
and digest is already attached, signing again changes nothing ("unchanged"). Ed25519 is
deterministic and the statement holds no time, so the same key, bundle and source give the same
envelope bytes anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillctl.bundle import sha256_digest
from skillctl.errors import IntegrityError, UnsupportedError
from skillctl.protocols import SIGN, Registry
from skillctl.registry.records import VersionRecord
from skillctl.trust import dsse, provenance
from skillctl.trust.keys import SigningKey
from skillctl.trust.statement import Subject, build_statement
from skillctl.trust.verify import verify_envelopes


@dataclass(frozen=True)
class SignResult:
    name: str
    version: str
    digest: str
    keyid: str
    status: str  # "attached" | "unchanged"
    source: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "digest": self.digest, "keyid": self.keyid,
                "status": self.status, "source": self.source}


def attestation(rec: VersionRecord, data: bytes, key: SigningKey, source: dict[str, Any] | None) -> bytes:
    """The DSSE envelope (bytes) of an in-toto statement about ``rec``'s bundle ``data``."""
    pred = provenance.predicate(data=data, tar_digest=rec.tar_digest, files=rec.files, source=source)
    return dsse.sign(build_statement(Subject(rec.name, rec.version, rec.digest), pred), key).to_bytes()


def sign_version(registry: Registry, rec: VersionRecord, key: SigningKey, *, data: bytes | None = None,
                 source_folder: Path | None = None) -> SignResult:
    """Sign the published version ``rec`` with ``key`` and attach the signature in ``registry``.
    ``data`` saves a download when the caller has the bundle; ``source_folder`` (the skill's
    folder) lets the statement record its git repository and commit."""
    skill = rec.resolved()
    if SIGN not in registry.capabilities:
        # Before any download. The backend says why in its own words (a folder that is
        # read-only for this user, a site that keeps none): a missing capability raises
        # UnsupportedError and changes nothing, which the registry conformance suite checks.
        registry.attach_signature(skill, b"")
        raise UnsupportedError(f"the registry {registry.url} cannot keep signatures; sign in a registry that can (a folder or oci://)")
    if data is None:
        data = registry.fetch(skill)
    if sha256_digest(data) != rec.digest:
        raise IntegrityError(f"{rec.name}@{rec.version}: the bundle to sign does not hash to the registry's {rec.digest[:19]}…")
    source = provenance.git_source(source_folder) if source_folder is not None else None
    subject = Subject(rec.name, rec.version, rec.digest)
    if verify_envelopes(registry.signatures(skill), subject, [key.public]).ok:
        return SignResult(rec.name, rec.version, rec.digest, key.keyid, "unchanged", source)
    status = registry.attach_signature(skill, attestation(rec, data, key, source))
    return SignResult(rec.name, rec.version, rec.digest, key.keyid, status, source)
