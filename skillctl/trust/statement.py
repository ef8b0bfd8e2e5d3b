"""The signed statement: an in-toto Statement v1 about one skill bundle.

    {
      "_type": "https://in-toto.io/Statement/v1",
      "subject": [{"name": "tally@1.2.0", "digest": {"sha256": "<hex of the .skill.tgz>"}}],
      "predicateType": "https://skillctl.dev/provenance/v1",
      "predicate": {
        "builder": {"id": "skillctl", "version": "0.1.0"},
        "bundle": {"tar_digest": "sha256:…", "size": 1234, "files": 5},
        "source": {"repository": "https://…", "commit": "<40 hex>", "path": "skills/tally",
                   "dirty": false} | null,
        "audit": {"rules": "<rules format> sha256:<of the rule file>", "allowlist": "ignored",
                  "counts": {"info": 0, …, "critical": 0}, "worst_severity": "low" | null}
      }
    }

The subject is the whole identity a verifier checks: ``name@version`` (exactly one subject,
name and version as the registry spells them) and the sha256 of the bundle bytes. The
predicate is what a reader of the attestation wants to know about the bundle; nothing in it is
needed to decide, so a newer predicate with more fields still verifies. It carries no time, so
signing the same bundle from the same tree twice gives the same bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from skillctl.errors import TrustError, VersionError
from skillctl.nesting import loads_json
from skillctl.registry.refs import NAME_RE
from skillctl.versioning import SemVer

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://skillctl.dev/provenance/v1"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Subject:
    name: str
    version: str
    digest: str  # "sha256:<hex>"

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class Statement:
    subject: Subject
    predicate_type: str
    predicate: dict[str, Any]


def build_statement(subject: Subject, predicate: dict[str, Any]) -> bytes:
    """The statement's bytes (sorted keys, no spaces: the same content gives the same bytes)."""
    doc = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject.label, "digest": {"sha256": subject.digest.removeprefix("sha256:")}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_statement(payload: bytes) -> Statement:
    """The statement in a verified payload; TrustError when it is not one of ours."""
    try:
        doc = loads_json(payload)
    except (UnicodeDecodeError, ValueError):
        raise TrustError("signed payload is not JSON") from None
    if not isinstance(doc, dict) or doc.get("_type") != STATEMENT_TYPE:
        raise TrustError(f"signed payload is not an in-toto Statement v1 (_type {str(doc.get('_type') if isinstance(doc, dict) else None)[:60]!r})")
    ptype = doc.get("predicateType")
    if ptype != PREDICATE_TYPE:
        raise TrustError(f"statement is a {str(ptype)[:80]!r}, not a skillctl provenance ({PREDICATE_TYPE})")
    subjects = doc.get("subject")
    if not isinstance(subjects, list) or len(subjects) != 1 or not isinstance(subjects[0], dict):
        raise TrustError("statement must have exactly one subject (the bundle)")
    subject = subjects[0]
    label, digest = subject.get("name"), subject.get("digest")
    if not isinstance(label, str) or "@" not in label:
        raise TrustError("statement subject has no NAME@VERSION name")
    name, _, version = label.rpartition("@")
    try:
        canonical = str(SemVer.parse(version))
    except VersionError:
        canonical = ""
    if not NAME_RE.match(name) or canonical != version:
        raise TrustError(f"statement subject {label[:80]!r} is not NAME@VERSION")
    hexd = digest.get("sha256") if isinstance(digest, dict) else None
    if not isinstance(hexd, str) or not _HEX64.match(hexd):
        raise TrustError("statement subject has no sha256 digest")
    predicate = doc.get("predicate")
    if not isinstance(predicate, dict):
        raise TrustError("statement has no predicate object")
    return Statement(Subject(name, version, "sha256:" + hexd), ptype, predicate)
