"""Deciding whether a skill version is signed: envelopes in, one verdict out.

A version is signed when at least one envelope attached to it

1. parses as a DSSE envelope of ``application/vnd.in-toto+json``,
2. carries an Ed25519 signature over its PAE that verifies with a *trusted* key (the key id in
   the envelope only hints; every trusted key is tried),
3. and — only then is the payload read — holds a skillctl provenance statement whose one
   subject is exactly this ``name@version`` and this bundle's sha256.

Every other envelope is a rejection with its reason; when none is valid the verdict's reason is
the most telling one, in this order: moved from another name or version, over another digest,
altered (a trusted key id whose signature fails), unknown key, malformed; with no envelope at
all, "unsigned".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from skillctl.errors import TrustError
from skillctl.trust.dsse import IN_TOTO_PAYLOAD_TYPE, parse_envelope, verified_by
from skillctl.trust.keys import PublicKey, short_id
from skillctl.trust.statement import Subject, parse_statement

# Most telling first: what the reason of a refusal names when several envelopes fail.
_KINDS = ("moved", "other-digest", "altered", "unknown-key", "malformed")


@dataclass(frozen=True)
class Signer:
    keyid: str
    key_source: str
    predicate: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"keyid": self.keyid, "key": self.key_source, "predicate": self.predicate}


@dataclass(frozen=True)
class Rejection:
    kind: str  # one of _KINDS
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message}


@dataclass(frozen=True)
class Verification:
    subject: Subject
    signers: tuple[Signer, ...]
    rejections: tuple[Rejection, ...]

    @property
    def ok(self) -> bool:
        return bool(self.signers)

    @property
    def kind(self) -> str:
        """"signed", "unsigned", or the kind of the most telling rejection."""
        if self.signers:
            return "signed"
        if not self.rejections:
            return "unsigned"
        return min(self.rejections, key=lambda r: _KINDS.index(r.kind)).kind

    @property
    def reason(self) -> str:
        """One line saying why the version is not signed (empty when it is)."""
        if self.signers:
            return ""
        if not self.rejections:
            return f"{self.subject.label} is not signed"
        first = min(self.rejections, key=lambda r: _KINDS.index(r.kind))
        more = len(self.rejections) - 1
        return f"{self.subject.label}: {first.message}" + (f" (and {more} other rejected signature{'s' * (more > 1)})" if more else "")

    def signed_by(self, keyid: str) -> bool:
        return any(s.keyid == keyid for s in self.signers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.subject.name,
            "version": self.subject.version,
            "digest": self.subject.digest,
            "verified": self.ok,
            "result": self.kind,
            "reason": self.reason,
            "signers": [s.to_dict() for s in self.signers],
            "rejected": [r.to_dict() for r in self.rejections],
        }


def _check_one(data: bytes, expected: Subject, keys: Sequence[PublicKey]) -> list[Signer] | Rejection:
    try:
        env = parse_envelope(data)
    except TrustError as exc:
        return Rejection("malformed", str(exc))
    if env.payload_type != IN_TOTO_PAYLOAD_TYPE:
        return Rejection("malformed", f"envelope payloadType is {env.payload_type[:60]!r}, not {IN_TOTO_PAYLOAD_TYPE}")
    good = verified_by(env, keys)
    if not good:
        claimed = sorted({s.keyid for s in env.signatures if s.keyid})
        trusted = {k.keyid for k in keys}
        if set(claimed) & trusted:
            return Rejection("altered", f"the signature of trusted key {short_id(next(c for c in claimed if c in trusted))} does not verify: the envelope was altered")
        named = ", ".join(short_id(c) for c in claimed) or "a key that gives no id"
        return Rejection("unknown-key", f"signed by {named}, which is not a trusted key")
    try:
        stmt = parse_statement(env.payload)
    except TrustError as exc:
        return Rejection("malformed", str(exc))
    got = stmt.subject
    if got.label != expected.label:
        other = " and another digest" if got.digest != expected.digest else ""
        return Rejection("moved", f"the signature was made for {got.label}{other}, not {expected.label}; it was moved here")
    if got.digest != expected.digest:
        return Rejection("other-digest", f"the signature is over {got.digest[:19]}…, not this bundle's {expected.digest[:19]}…")
    return [Signer(k.keyid, k.source, stmt.predicate) for k in good]


def verify_envelopes(envelopes: Sequence[bytes], expected: Subject, keys: Sequence[PublicKey]) -> Verification:
    """Check every envelope for ``expected`` against ``keys`` (see the module docstring)."""
    signers: dict[str, Signer] = {}
    rejections: list[Rejection] = []
    for data in envelopes:
        got = _check_one(data, expected, keys)
        if isinstance(got, Rejection):
            rejections.append(got)
            continue
        for s in got:
            signers.setdefault(s.keyid, s)
    order = {k.keyid: i for i, k in enumerate(keys)}  # the policy's order: the first listed key signs the lock
    return Verification(expected, tuple(sorted(signers.values(), key=lambda s: order.get(s.keyid, len(order)))), tuple(rejections))
