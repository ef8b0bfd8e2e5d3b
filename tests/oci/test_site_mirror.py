"""Mirroring a well-known site into an OCI registry: each version becomes the bundle of its files,
and the OCI record keeps the original artifact's URL and digest (in the config blob)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillctl.registry.local import LocalRegistry
from skillctl.registry.mirror import copy_skills
from skillctl.registry.prepare import prepare_folder
from skillctl.registry.wellknown import WellKnownRegistry
from skillctl.registry.wellknown.site import build_site

from wellknown.server import SiteServer

from .helpers import write_skill

pytestmark = [pytest.mark.requires_registry]
WK = ".well-known/agent-skills"


def test_copy_from_a_site_into_oci_keeps_the_original(tmp_path: Path, oci, registry_server, ns, monkeypatch) -> None:
    monkeypatch.setenv("SKILLCTL_CACHE_DIR", str(tmp_path / "cache"))
    with LocalRegistry(tmp_path / "reg") as reg:
        for version in ("1.0.0", "1.1.0"):
            reg.publish(prepare_folder(write_skill(tmp_path / version, "tally", version)))
        reg.set_yanked("tally@1.0.0", True, "old")
        build_site(tmp_path / "site", reg)
        original = {r.version: r.digest for r in reg.versions("tally")}
    with SiteServer(tmp_path / "site") as srv, WellKnownRegistry.from_url(srv.url, insecure=True) as site:
        results = copy_skills("tally", site, oci)
        assert [(r.version, r.status, r.yanked) for r in results] == [("1.0.0", "published", True), ("1.1.0", "published", False)]
        again = copy_skills("tally", site, oci)
        assert [r.status for r in again] == ["unchanged", "unchanged"]
        snapshot = json.loads((tmp_path / "site" / WK / "tally/v1.1.0/index.json").read_text())["skills"][0]
    rec = oci.resolve_record("tally@1.1.0")
    assert rec.digest == original["1.1.0"]  # files at the root -> the same canonical bundle
    assert rec.mirrored_from is not None and rec.mirrored_from.digest == snapshot["digest"]
    assert rec.mirrored_from.url == f"{srv.url}/{WK}/tally/v1.1.0/tally.tar.gz"
    assert oci.resolve_record("tally@1.0.0").yanked
