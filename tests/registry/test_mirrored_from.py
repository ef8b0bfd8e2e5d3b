"""A mirrored version's original (the site artifact's URL and digest, ``mirrored_from``) in the
folder registry, and the in-place upgrade of a registry made before the column existed."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

from skillctl.registry.local import SCHEMA_VERSION, LocalRegistry
from skillctl.registry.records import MirroredFrom

from .helpers import prepared

ORIGIN = MirroredFrom("https://skills.example.com/.well-known/agent-skills/demo/v1.0.0/demo.tar.gz", "sha256:" + "ab" * 32)


def test_mirrored_from_is_stored_and_reported(reg: LocalRegistry, src: Path):
    reg.publish(dataclasses.replace(prepared(src, version="1.0.0"), mirrored_from=ORIGIN))
    reg.publish(prepared(src, version="1.1.0"))
    assert reg.resolve_record("demo@1.0.0").mirrored_from == ORIGIN
    assert reg.resolve_record("demo@1.0.0").to_dict()["mirrored_from"] == {"url": ORIGIN.url, "digest": ORIGIN.digest}
    plain = reg.resolve_record("demo@1.1.0")
    assert plain.mirrored_from is None and "mirrored_from" not in plain.to_dict()
    assert reg.resolve_record("demo").version == "1.1.0"  # ranges still read the order columns


def test_a_registry_from_before_mirrors_is_upgraded_in_place(reg_path: Path, src: Path):
    with LocalRegistry(reg_path) as reg:
        reg.publish(prepared(src, version="1.0.0"))
    conn = sqlite3.connect(reg_path / "index.sqlite")
    conn.execute("ALTER TABLE versions DROP COLUMN mirrored_from")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with LocalRegistry(reg_path) as reg:
        assert reg.resolve_record("demo@1.0.0").mirrored_from is None
        reg.publish(dataclasses.replace(prepared(src, version="2.0.0"), mirrored_from=ORIGIN))
        assert reg.resolve_record("demo@2.0.0").mirrored_from == ORIGIN
        assert reg.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
