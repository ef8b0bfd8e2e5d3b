"""DSSE envelopes (secure-systems-lab/dsse, protocol and envelope 1.0.0) signed with Ed25519.

    {"payload": BASE64(BODY), "payloadType": TYPE, "signatures": [{"keyid": ID, "sig": BASE64(SIG)}]}

    SIG = Ed25519-Sign(PAE(UTF8(TYPE), BODY))
    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body   (LEN: ASCII decimal)

Why not ``securesystemslib.dsse``: the envelope is these few lines, and a trust decision needs
a precise one-line reason for each way an envelope can be wrong (not JSON, missing field,
bad base64, a signature of the wrong length, a signature that does not verify), which that
library folds into a few generic exceptions. The tests check that both implementations accept
each other's envelopes, so the format is the standard one.

Parsing follows the spec: standard and URL-safe base64 are both accepted, unknown fields are
ignored, ``keyid`` may be absent. Nothing in the payload is believed before a signature over it
verifies with a trusted key (``verify``).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Sequence

from cryptography.exceptions import InvalidSignature

from skillctl.errors import TrustError
from skillctl.nesting import loads_json
from skillctl.registry.signatures import MAX_ENVELOPE_BYTES
from skillctl.trust.keys import PublicKey, SigningKey

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
ED25519_SIGNATURE_BYTES = 64
MAX_SIGNATURES = 16


def pae(payload_type: str, body: bytes) -> bytes:
    """The Pre-Authentication Encoding: what is actually signed."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


@dataclass(frozen=True)
class Signature:
    keyid: str
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    payload: bytes
    payload_type: str
    signatures: tuple[Signature, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "payload": base64.b64encode(self.payload).decode("ascii"),
            "payloadType": self.payload_type,
            "signatures": [{"keyid": s.keyid, "sig": base64.b64encode(s.sig).decode("ascii")} for s in self.signatures],
        }

    def to_bytes(self) -> bytes:
        """Stable bytes (sorted keys, no spaces): the same envelope is stored once."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":")).encode("utf-8")


def sign(body: bytes, key: SigningKey, payload_type: str = IN_TOTO_PAYLOAD_TYPE) -> Envelope:
    return Envelope(body, payload_type, (Signature(key.keyid, key.key.sign(pae(payload_type, body))),))


def verifies(envelope: Envelope, signature: Signature, key: PublicKey) -> bool:
    try:
        key.key.verify(signature.sig, pae(envelope.payload_type, envelope.payload))
    except InvalidSignature:
        return False
    return True


def _b64(value: Any, field: str) -> bytes:
    """Standard or URL-safe base64 (the spec allows both), padding optional; strict otherwise."""
    if not isinstance(value, str):
        raise TrustError(f"envelope field {field} is not a string")
    text = value.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise TrustError(f"envelope field {field} is not valid base64 (truncated or altered)") from None


def parse_envelope(data: bytes) -> Envelope:
    """A DSSE JSON envelope from untrusted bytes, or TrustError naming what is wrong with it."""
    if len(data) > MAX_ENVELOPE_BYTES:
        raise TrustError(f"envelope is {len(data)} bytes, over the {MAX_ENVELOPE_BYTES // 1024} KiB cap")
    try:
        doc = loads_json(data)
    except (UnicodeDecodeError, ValueError):
        raise TrustError("envelope is not JSON (damaged or truncated)") from None
    if not isinstance(doc, dict):
        raise TrustError("envelope is not a JSON object")
    for field in ("payload", "payloadType", "signatures"):
        if field not in doc:
            raise TrustError(f"envelope has no {field}")
    if not isinstance(doc["payloadType"], str):
        raise TrustError("envelope payloadType is not a string")
    payload = _b64(doc["payload"], "payload")
    sigs = doc["signatures"]
    if not isinstance(sigs, list) or not sigs:
        raise TrustError("envelope has no signatures")
    if len(sigs) > MAX_SIGNATURES:
        raise TrustError(f"envelope has {len(sigs)} signatures, over the cap of {MAX_SIGNATURES}")
    out = []
    for i, s in enumerate(sigs):
        if not isinstance(s, dict) or "sig" not in s:
            raise TrustError(f"envelope signature {i + 1} has no sig")
        keyid = s.get("keyid") or ""
        if not isinstance(keyid, str):
            raise TrustError(f"envelope signature {i + 1}: keyid is not a string")
        raw = _b64(s["sig"], f"signatures[{i}].sig")
        if len(raw) != ED25519_SIGNATURE_BYTES:
            raise TrustError(
                f"envelope signature {i + 1} is {len(raw)} bytes; an Ed25519 signature has {ED25519_SIGNATURE_BYTES} (truncated or not Ed25519)"
            )
        out.append(Signature(keyid, raw))
    return Envelope(payload, doc["payloadType"], tuple(out))


def verified_by(envelope: Envelope, keys: Sequence[PublicKey]) -> list[PublicKey]:
    """The trusted keys with a valid signature in ``envelope``. The key id is only a hint (the
    spec forbids using it for decisions): every trusted key is tried against every signature."""
    found: list[PublicKey] = []
    for key in keys:
        if any(verifies(envelope, s, key) for s in envelope.signatures):
            found.append(key)
    return found
