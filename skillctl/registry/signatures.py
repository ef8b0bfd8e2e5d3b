"""What every registry checks before keeping a signature envelope with a version.

A registry stores envelopes; it does not judge them (``skillctl.trust`` verifies signatures,
keys and statements when a version is used). It only refuses what cannot be an envelope at
all, and caps sizes and counts, so a writer cannot make every reader download megabytes.
An envelope is identified by the sha256 of its bytes: the same bytes are kept once.
"""

from __future__ import annotations


from skillctl.bundle import sha256_digest
from skillctl.errors import IntegrityError, RegistryError
from skillctl.nesting import loads_json
from skillctl.protocols import ResolvedSkill
from skillctl.registry.records import VersionRecord

# An attestation of ours is ~2 KiB.
MAX_ENVELOPE_BYTES = 64 * 1024
MAX_SIGNATURES_PER_VERSION = 32
DSSE_FIELDS = ("payload", "payloadType", "signatures")


def check_envelope(data: bytes, label: str) -> str:
    """The envelope's digest, after refusing bytes that are not a DSSE JSON envelope."""
    if not isinstance(data, bytes) or not data:
        raise RegistryError(f"{label}: a signature envelope must be non-empty bytes")
    if len(data) > MAX_ENVELOPE_BYTES:
        raise RegistryError(f"{label}: signature envelope is {len(data)} bytes, over the {MAX_ENVELOPE_BYTES // 1024} KiB cap")
    try:
        doc = loads_json(data)
    except (UnicodeDecodeError, ValueError):
        raise RegistryError(f"{label}: signature envelope is not JSON; it is not a DSSE envelope") from None
    if not isinstance(doc, dict) or any(f not in doc for f in DSSE_FIELDS):
        raise RegistryError(f"{label}: signature envelope lacks {', '.join(DSSE_FIELDS)}; it is not a DSSE envelope")
    return sha256_digest(data)


def check_same_bundle(rec: VersionRecord, skill: ResolvedSkill, url: str) -> None:
    """Signatures belong to the bundle a caller resolved: refuse when the version now holds another."""
    if rec.digest != skill.digest:
        raise IntegrityError(
            f"{skill.name}@{skill.version} in {url} holds bundle {rec.digest[:19]}…, not {skill.digest[:19]}…; "
            "its signatures are not for the bundle asked about"
        )


def too_many(label: str) -> RegistryError:
    return RegistryError(f"{label} already has {MAX_SIGNATURES_PER_VERSION} signatures, the most a version keeps")
