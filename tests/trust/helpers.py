"""Builders for the trust tests: real key files, real registries, real envelopes."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

from skillctl.protocols import Registry
from skillctl.registry.records import VersionRecord
from skillctl.trust.keys import PublicKey, SigningKey, generate_key, load_public_key, load_signing_key
from skillctl.trust.sign import attestation, sign_version

from registry.helpers import prepared


def make_key(folder: Path, name: str = "team") -> tuple[SigningKey, PublicKey]:
    folder.mkdir(parents=True, exist_ok=True)
    made = generate_key(folder / name)
    return load_signing_key(made.private_path), load_public_key(made.public_path)


def publish(reg: Registry, root: Path, name: str = "demo", version: str = "1.0.0", content: str = "") -> VersionRecord:
    return reg.publish(prepared(root, name, version, content)).record


def publish_signed(reg: Registry, root: Path, key: SigningKey, name: str = "demo", version: str = "1.0.0",
                   content: str = "") -> VersionRecord:
    rec = publish(reg, root, name, version, content)
    assert sign_version(reg, rec, key).status == "attached"
    return rec


def envelope_for(reg: Registry, rec: VersionRecord, key: SigningKey, **claims: str) -> bytes:
    """A genuine signature by ``key`` over a statement naming ``rec`` with ``claims`` changed
    (name, version, digest): what a signature made for another version looks like."""
    data = reg.fetch(rec.resolved())
    return attestation(replace(rec, **claims), data, key, None)


def tamper_sig(envelope: bytes, *, truncate: int = 0, flip: bool = False) -> bytes:
    doc = json.loads(envelope)
    raw = base64.b64decode(doc["signatures"][0]["sig"])
    if flip:
        raw = bytes([raw[0] ^ 1]) + raw[1:]
    if truncate:
        raw = raw[:-truncate]
    doc["signatures"][0]["sig"] = base64.b64encode(raw).decode()
    return json.dumps(doc).encode()


def tamper_payload(envelope: bytes, edit) -> bytes:
    """``edit(statement dict)`` applied to the signed payload; the signature left as it was."""
    doc = json.loads(envelope)
    stmt = json.loads(base64.b64decode(doc["payload"]))
    edit(stmt)
    doc["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    return json.dumps(doc).encode()
