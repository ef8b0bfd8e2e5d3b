"""Signatures in the folder registry's index: the table older registries get, and its checks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from skillctl.registry.local import SCHEMA_VERSION, LocalRegistry

from .helpers import prepared

ENVELOPE = json.dumps({"payload": "", "payloadType": "application/vnd.in-toto+json", "signatures": [{"sig": ""}]}).encode()


def test_a_registry_from_before_signatures_gets_the_table_when_opened(reg_path: Path, src: Path) -> None:
    with LocalRegistry(reg_path) as reg:
        reg.publish(prepared(src, version="1.0.0"))
    conn = sqlite3.connect(reg_path / "index.sqlite")
    conn.execute("DROP TABLE signatures")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with LocalRegistry(reg_path) as reg:
        skill = reg.resolve("demo@1.0.0")
        assert reg.signatures(skill) == []
        assert reg.attach_signature(skill, ENVELOPE) == "attached" and reg.signatures(skill) == [ENVELOPE]
        assert reg.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert reg.verify() == []


def test_verify_reports_a_kept_envelope_that_was_altered(reg_path: Path, src: Path) -> None:
    with LocalRegistry(reg_path) as reg:
        reg.attach_signature(reg.publish(prepared(src, version="1.0.0")).record.resolved(), ENVELOPE)
        reg.conn.execute("UPDATE signatures SET envelope = ?", (ENVELOPE.replace(b'"sig": ""', b'"sig": "x"'),))
        problems = reg.verify()
    assert [(p.severity, p.kind) for p in problems] == [("error", "signature")]
    assert "hashes to" in problems[0].message
